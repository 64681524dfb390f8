/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config/aws.h — S3 credentials and region as the AWS tools find them (the environment, then the
 * shared credentials file), for the s3:// back end.
 *
 * The one idea: the environment is read only in src/config/ (tests/arch/check_getenv.sh), so the
 * back end asks here.  The order is the AWS CLI's: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN; else the profile AWS_PROFILE (default "default") of the file named by the URL's
 * credentials_file=, else AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials.
 *
 * Callers: store/http.c.  Must not: print or log a secret.
 */
#ifndef KC_CONFIG_AWS_H
#define KC_CONFIG_AWS_H

#include <stddef.h>

typedef struct kc_aws_creds {
    char access_key[128];
    char secret_key[128];
    char session_token[2048]; /* "" when none */
    char region[64];          /* AWS_REGION or AWS_DEFAULT_REGION; "" when neither */
} kc_aws_creds;

/** Credentials for S3: KC_OK with *out (wipe it with kc_wipe after use), KC_EINVAL naming what is
 *  missing (never a secret).  `file`: a credentials file named by the URL, or NULL.  `no_env`: 1 to
 *  ignore the environment (KC_OPEN_NO_ENV), then only `file` is read. */
int kc_config_aws_creds_(const char *file, int no_env, kc_aws_creds *out);

#endif
