/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config/internal.h — the config part's index of its private functions that other parts call, with
 * the parts that call each (their declarations stay in the headers named).  Generated and
 * checked by tests/arch/check_internal.py; a new caller across parts is added here.
 */
#ifndef KC_CONFIG_INTERNAL_H
#define KC_CONFIG_INTERNAL_H

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_config_aws_creds_         aws.h     Callers: store
 *   kc_config_dir_file_ok_       config.h  Callers: cache
 *   kc_config_free_              config.h  Callers: cache
 *   kc_config_load_              config.h  Callers: cache
 *   kc_config_options_settings_  config.h  Callers: cache
 *   kc_config_set_               config.h  Callers: cache
 * ---- end of the index ---- */

#endif
