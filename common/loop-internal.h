/*
 * Private glue between loop.c (the loop core) and loop-curl.c (libcurl's
 * multi-socket API on sd-event). Nothing outside common/loop*.c includes
 * this.
 */
#ifndef KANNA_COMMON_LOOP_INTERNAL_H
#define KANNA_COMMON_LOOP_INTERNAL_H

#include "common/loop.h"

struct loop_curl;

/* Creates the multi handle and hooks its sockets and timer onto the loop. */
int loop_curl_new(struct loop_curl **ret, struct loop *loop);
/* Aborts every transfer still running (done() sees CURLE_ABORTED_BY_CALLBACK). */
struct loop_curl *loop_curl_free(struct loop_curl *c);
struct loop_curl *loop_get_curl(const struct loop *loop);

#endif
