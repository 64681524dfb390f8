/* SPDX-License-Identifier: Apache-2.0 */
// consumer.cpp — consumer.c built as C++ (-std=c++11 -pedantic -Wall -Wextra -Werror): the _INIT macros
// and the headers must compile there too.
#include "consumer.c"
