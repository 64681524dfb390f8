#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile HTTP server for test_http_hostile: each first path segment picks a misbehaviour.

    http_hostile.py PORTFILE      listens on a free loopback port, writes it to PORTFILE, serves until killed

/ok/...        GET of what was PUT (404 before), PUT stores, HEAD, DELETE
/short/...     Content-Length 1000, 10 bytes, then the connection closed (a body cut short)
/wrongcl/...   Content-Length 50 with a 20-byte body, then closed (a wrong Content-Length)
/huge/...      Content-Length of 1 GiB announced (over any value cap), a little sent
/chunky/...    a chunked body that never ends below the cap (256 KiB chunks, 64 MiB in all)
/redirect/...  302 to another host (localhost instead of 127.0.0.1) that would answer with a value
/value/...     200 with a value, always
/e500/...      500
/e429/...      429 every time
/once429/...   429 on the first GET of a path, then 200 with a body
/silent/...    accepts, reads the request, never answers
/bighead/...   HEAD: 200 with a Content-Length of 1 GiB (an object over any value cap), no body
/loop?...      an S3 listing (bucket "loop", path-style) truncated with the same continuation token every time
"""
import socket
import sys
import threading
import time

PORT = 0
store = {}
seen = set()
lock = threading.Lock()


def reply(conn, status, body=b"", extra=""):
    head = "HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n" % (status, len(body), extra)
    conn.sendall(head.encode() + body)


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return method, path, rest[:n]


def serve(conn):
    try:
        while True:
            req = read_request(conn)
            if req is None:
                return
            method, path, body = req
            mode = path.split("?")[0].split("/")[1]
            if mode == "ok":
                with lock:
                    if method == "PUT":
                        store[path] = body
                        reply(conn, "201 Created")
                    elif method == "DELETE":
                        reply(conn, "204 No Content" if store.pop(path, None) is not None else "404 Not Found")
                    elif path in store:
                        b = store[path]
                        if method == "HEAD":
                            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(b))
                        else:
                            reply(conn, "200 OK", b)
                    else:
                        reply(conn, "404 Not Found", b"" if method == "HEAD" else b"no such object")
            elif mode == "short":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10)
                return
            elif mode == "wrongcl":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\nConnection: close\r\n\r\n" + b"y" * 20)
                return
            elif mode == "huge":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n" + b"z" * 1000)
                return
            elif mode == "chunky":
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                for _ in range(256):
                    conn.sendall(b"40000\r\n" + b"c" * 0x40000 + b"\r\n")
                conn.sendall(b"0\r\n\r\n")
                return
            elif mode == "redirect":
                reply(conn, "302 Found", b"", "Location: http://localhost:%d/value/x\r\n" % PORT)
            elif mode == "value":
                reply(conn, "200 OK", b"a value from elsewhere")
            elif mode == "e500":
                reply(conn, "500 Internal Server Error", b"boom")
            elif mode == "e429":
                reply(conn, "429 Too Many Requests", b"slow down")
            elif mode == "once429":
                with lock:
                    first = path not in seen
                    seen.add(path)
                if first:
                    reply(conn, "429 Too Many Requests", b"slow down")
                else:
                    reply(conn, "200 OK", b"after a retry")
            elif mode == "bighead" and method == "HEAD":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n")
            elif mode == "loop":
                reply(conn, "200 OK", b"<ListBucketResult><IsTruncated>true</IsTruncated>"
                      b"<NextContinuationToken>again</NextContinuationToken></ListBucketResult>")
            elif mode == "silent":
                time.sleep(30)
                return
            else:
                reply(conn, "404 Not Found")
    except OSError:
        pass
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    global PORT
    PORT = s.getsockname()[1]
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
