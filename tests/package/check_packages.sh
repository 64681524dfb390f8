#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_packages.sh — the .deb packages (cmake/Packaging.cmake) as a user gets them: built with CPack
# from a build folder, their control fields and contents checked, then a runtime's build (the
# consumer of tests/api/consumer/, copied out of the tree) made against the packages ALONE, through
# find_package(kcache) and through pkg-config, shared, and static when the dependencies' -dev
# packages (libkcache-dev's Suggests) are installed; each consumer program then gets and runs a
# graph on the packaged driver double (not run, and said so, where there is no NVRTC).
#   check_packages.sh BUILD_DIR SOURCE_DIR            # ctest's test_package: no root; the packages
#                                                     # unpacked with dpkg -x into a temporary prefix
#   check_packages.sh --install BUILD_DIR SOURCE_DIR  # `.ci/run package`, as root: dpkg -i, then the
#       consumers with no hint at all, man finds the manual pages, the completions are where bash and
#       zsh look, `kcache --version` runs; then dpkg --purge and nothing of the packages is left
# What it must not do: read anything of the source or build tree but the packages and the consumer's
# sources, or leave a package installed (--install purges them on every way out).
set -euo pipefail
install=0
[ "${1:-}" = --install ] && { install=1; shift; }
[ $# = 2 ] || { echo "usage: check_packages.sh [--install] BUILD_DIR SOURCE_DIR" >&2; exit 2; }
for t in cpack dpkg-deb dpkg-shlibdeps file; do
  command -v "$t" >/dev/null || { echo "package: skipped: no $t (Debian: dpkg-dev, file)"; exit 77; }
done
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
version=$(sed -n 's/^#define KC_VERSION_STRING "\(.*\)"$/\1/p' "$src/include/kcache/version.h")
major=${version%%.*}
lib=libkcache$major
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-package.XXXXXX")
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then dpkg --purge kcache libkcache-dev "$lib" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "package: $*" >&2; exit 1; }

# ---- 1. the packages ----
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/debs" >"$tmp/cpack.log" 2>&1 \
  || { cat "$tmp/cpack.log"; fail "cpack failed"; }
deb() { find "$tmp/debs" -maxdepth 1 -name "${1}_${version}_*.deb" | head -1; }
for p in "$lib" libkcache-dev kcache; do
  [ -f "$(deb "$p")" ] || fail "cpack made no $p $version ($(ls "$tmp/debs"))"
done
field() { dpkg-deb -f "$(deb "$1")" "$2"; }
has_dep() { # package, dependency (a regex)
  field "$1" Depends | tr ',' '\n' | grep -qE "^ *$2\$" || fail "$1: Depends '$(field "$1" Depends)' lacks '$2'"
}
has_dep "$lib" 'libc6 \(>= [^)]*\)' # dpkg-shlibdeps ran
has_dep libkcache-dev "$lib \\(= $version\\)"
has_dep kcache "$lib \\(= $version\\)"
has_dep kcache 'libc6 \(>= [^)]*\)'
for p in "$lib" libkcache-dev kcache; do
  [ "$(field "$p" Version)" = "$version" ] || fail "$p: Version $(field "$p" Version), version.h says $version"
  field "$p" Depends | grep -q -- '-dev' && fail "$p depends on a -dev package: $(field "$p" Depends)"
done
# The listing is read whole first: `tar -t | grep -q` under pipefail failed when grep, done at its
# match, closed the pipe while tar still wrote (SIGPIPE), as it sometimes did for shlibs.
ctrl=$(dpkg-deb --ctrl-tarfile "$(deb "$lib")" | tar -t)
for c in shlibs triggers; do
  grep -qx "./$c" <<<"$ctrl" || fail "$lib has no $c file (its control files: $(echo $ctrl))"
done
echo "package: $lib, libkcache-dev, kcache $version; Depends of $lib: $(field "$lib" Depends)"

# ---- 2. what each holds ----
for p in "$lib" libkcache-dev kcache; do
  dpkg-deb -c "$(deb "$p")" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' >"$tmp/$p.files"
done
must() { grep -qE "$2" "$tmp/$1.files" || fail "$1 has no file like $2"; }
must "$lib" '/libkcache\.so\.[0-9.]+$'
must "$lib" "/usr/share/doc/$lib/copyright\$"
must libkcache-dev '/usr/include/kcache\.h$'
must libkcache-dev '/libkcache\.a$'
must libkcache-dev '/libkcache\.so$'
must libkcache-dev '/cmake/kcache/kcacheConfig\.cmake$'
must libkcache-dev '/pkgconfig/kcache\.pc$'
must libkcache-dev '/man3/libkcache\.3(\.gz)?$'
must kcache '^/usr/bin/kcache$'
grep -vE '/libkcache\.so\.[0-9.]+$|/usr/share/doc/' "$tmp/$lib.files" && fail "$lib holds more than the library"
grep -E '/cmake/kcache/Find[^/]*\.cmake$' "$tmp/libkcache-dev.files" \
  && fail "libkcache-dev installs Find modules where a consumer's find_package sees them"
for p in "$lib" libkcache-dev kcache; do
  must "$p" "/usr/share/doc/$p/copyright\$"
  must "$p" "/usr/share/doc/$p/changelog\\.gz\$"
done
grep -hE '/man/man[0-9]/' "$tmp"/*.files | grep -v '\.gz$' && fail "manual pages not compressed (Debian policy 12.1)"
# Every file installed is in a package: no install rule without a component.
cmake --install "$build" --component Unspecified --prefix "$tmp/unspecified" >/dev/null
[ -z "$(find "$tmp/unspecified" -type f 2>/dev/null)" ] \
  || fail "installed but in no package (an install rule without COMPONENT): $(find "$tmp/unspecified" -type f)"
# The soname is libkcache.so.MAJOR.
mkdir -p "$tmp/x-lib" && dpkg-deb -x "$(deb "$lib")" "$tmp/x-lib"
so=$(find "$tmp/x-lib" -name 'libkcache.so.*.*' | head -1)
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libkcache.so.$major" ] || fail "soname '$soname', not libkcache.so.$major"
# What the library opens on demand is never linked (and so never in Depends): libcrypto, libssl,
# libcurl, libhiredis; a build with the redis back end recommends the hiredis it was built against.
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
grep -qE 'lib(crypto|ssl|curl|hiredis)\.' <<<"$needed" && fail "$lib links what it opens on demand: $needed"
if grep -qa 'libhiredis\.so\.' "$so"; then # the redis back end is built in: it names the soname it opens
  tr ',' '\n' <<<"$(field "$lib" Recommends)" | grep -qE '^ *libhiredis[0-9.]+$' \
    || fail "$lib: Recommends '$(field "$lib" Recommends)' names no libhiredis"
fi
docs=$(cat "$tmp"/*.files | grep -E '/man/|completion' | tr '\n' ' ')
echo "package: contents right; soname $soname; manual pages and completions: $docs"

# ---- 3. the consumers, against the packages alone ----
cp -r "$src/tests/api/consumer" "$tmp/src"
if [ "$install" = 1 ]; then
  for p in "$lib" libkcache-dev kcache; do
    ! dpkg-query -W "$p" >/dev/null 2>&1 || fail "$p is installed already: remove it first"
  done
  [ ! -e /usr/local/lib/cmake/kcache ] || fail "a kcache is installed under /usr/local: it would be found first"
  installed=1
  dpkg -i "$(deb "$lib")" "$(deb libkcache-dev)" "$(deb kcache)" >"$tmp/dpkg.log" 2>&1 \
    || { cat "$tmp/dpkg.log"; fail "dpkg -i failed"; }
  root=""
else
  for p in "$lib" libkcache-dev kcache; do dpkg-deb -x "$(deb "$p")" "$tmp/root"; done
  root=$tmp/root
fi
pcdir=$(dirname "$(grep '/pkgconfig/kcache\.pc$' "$tmp/libkcache-dev.files")")
libdir=$(dirname "$pcdir")
double=$root$libdir/libkcache_cuda_double.so
run() { # name, program: on a fresh cache, the packaged double, the packaged library
  local rc=0
  mkdir -p "$tmp/cache-$1"
  KCACHE_CUDA_DRIVER=$double KCD_DEVICES=9.0 LD_LIBRARY_PATH=${root:+$root$libdir} "$2" "$tmp/cache-$1" \
    >"$tmp/run.log" 2>&1 || rc=$?
  case $rc in
    0) ran="$ran $1" ;;
    77) norun="$norun $1" ;;
    *) cat "$tmp/run.log"; fail "$1: exit $rc" ;;
  esac
}
ran="" norun=""
cmake_consumer() { # name, static ON/OFF
  local b=$tmp/b-$1 args=(-G Ninja -DKCACHE_EXPECT_VERSION="$version" -DKCACHE_CONSUMER_STATIC="$2"
                          -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
  [ -n "$root" ] && args+=(-DCMAKE_PREFIX_PATH="$root/usr")
  # The shared library needs no dependency's package: finding one is refused.
  [ "$2" = OFF ] && args+=(-DCMAKE_DISABLE_FIND_PACKAGE_Zstd=ON -DCMAKE_DISABLE_FIND_PACKAGE_XXHash=ON
                           -DCMAKE_DISABLE_FIND_PACKAGE_Hiredis=ON)
  cmake -S "$tmp/src" -B "$b" "${args[@]}" >"$tmp/cfg.log" 2>&1 || { cat "$tmp/cfg.log"; fail "$1: configure"; }
  cmake --build "$b" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "$1: build"; }
  [ "$(cat "$b/kcache_dir.txt")" = "$root$libdir/cmake/kcache" ] || fail "$1: kcache found at $(cat "$b/kcache_dir.txt")"
  if [ "$2" = OFF ]; then
    grep -qE '^(Zstd|XXHash|Hiredis)_' "$b/CMakeCache.txt" && fail "$1: a dependency was looked for"
  else
    readelf -d "$b/consumer_c" | grep -q 'libkcache\.so' && fail "$1: the static consumer needs libkcache.so"
  fi
  run "$1-c" "$b/consumer_c"
  run "$1-cxx" "$b/consumer_cxx"
}
pc_consumer() { # name, static 1 or 0
  local flags=(-std=c11 -pedantic -Wall -Wextra -Werror) out=$tmp/$1 libs=() w
  # Only the package's .pc files, where they are unpacked (installed, they sit beside the system's).
  [ -n "$root" ] && export PKG_CONFIG_LIBDIR=$root$pcdir
  [ "$(pkg-config --modversion kcache)" = "$version" ] || fail "pkg-config: version $(pkg-config --modversion kcache)"
  # shellcheck disable=SC2054,SC2207  # -Wl,... are single words; pkg-config's output is split on purpose
  if [ "$2" = 1 ]; then # libkcache.a, then what --static adds, shared
    libs=($(pkg-config --libs-only-L kcache) -Wl,-Bstatic -lkcache -Wl,-Bdynamic)
    for w in $(pkg-config --static --libs-only-l kcache); do [ "$w" = -lkcache ] || libs+=("$w"); done
  else
    libs=($(pkg-config --libs kcache))
  fi
  # shellcheck disable=SC2046
  cc "${flags[@]}" $(pkg-config --cflags kcache) "$tmp/src/consumer.c" -o "$out" "${libs[@]}" -lkcache_cuda_double \
    || fail "$1: pkg-config build"
  if [ "$2" = 1 ] && readelf -d "$out" | grep -q 'libkcache\.so'; then fail "$1: the static consumer needs libkcache.so"; fi
  run "$1" "$out"
}
cmake_consumer cmake-shared OFF
pc_consumer pc-shared 0
static_needs=$(field libkcache-dev Suggests | tr -d ' ' | tr ',' ' ')
static_missing=""
for p in $static_needs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || static_missing+=" $p"; done
if [ -z "$static_missing" ]; then
  cmake_consumer cmake-static ON
  pc_consumer pc-static 1
else
  echo "package: static consumers not built: needs$static_missing"
fi
echo "package: consumers built against the packages alone; ran:${ran:- none}${norun:+; not run (no NVRTC):$norun}"

# ---- 4. installed: manual pages, completions, the tool; then removed without a trace ----
[ "$install" = 1 ] || exit 0
for page in $(grep -E '/man/man[0-9]/' "$tmp"/*.files | sed 's|.*/||; s|\.gz$||'); do
  man -w "${page##*.}" "${page%.*}" >/dev/null || fail "man does not find ${page%.*}(${page##*.})"
done
man -w 3 libkcache >/dev/null || fail "man does not find libkcache(3)"
bashdir=$(pkg-config --variable=completionsdir bash-completion 2>/dev/null || echo /usr/share/bash-completion/completions)
for f in $(grep -E 'completion' "$tmp/kcache.files"); do
  case $f in
    "$bashdir"/* | /usr/share/zsh/vendor-completions/_*) ;;
    *) fail "completion $f is where neither bash-completion ($bashdir) nor Debian's zsh looks" ;;
  esac
done
kcache --version >/dev/null || fail "kcache --version failed"
dpkg --purge kcache libkcache-dev "$lib" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg --purge failed"; }
installed=0
left=$(cat "$tmp"/*.files | while read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done || true)
[ -z "$left" ] || fail "left after dpkg --purge: $left"
for d in "$libdir/cmake/kcache" /usr/include/kcache; do [ ! -e "$d" ] || fail "left after dpkg --purge: $d"; done
if command -v lintian >/dev/null; then
  echo "package: lintian says (an error fails the step):"
  lintian --tag-display-limit 0 --fail-on error "$tmp"/debs/*.deb || fail "lintian found errors"
fi
echo "package: installed with dpkg -i, manual pages and completions found, purged without a trace"
