/*
 * Structural check of an untrusted msgpack frame before msgpack-c unpacks it
 * (see proto/scan.c). Internal to proto/.
 */
#ifndef KANNA_PROTO_SCAN_H
#define KANNA_PROTO_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "proto/schema.h"

/* 0, or -EBADMSG/-EMSGSIZE with err filled (truncated, trailing, malformed). */
int proto_scan_frame(const void *buf, size_t len, struct proto_error *err);

#endif
