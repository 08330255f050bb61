/*
 * Base64 with the standard alphabet (RFC 4648 §4), through OpenSSL's EVP
 * coder: kubeconfig certificate data, EC2 user data, the cluster CA in user
 * data, the sim's continue tokens and protobuf bytes.
 */
#ifndef KANNA_COMMON_BASE64_H
#define KANNA_COMMON_BASE64_H

#include <stddef.h>

/* data[0..len) encoded, with padding, NUL-terminated; NULL when out of memory. */
char *base64_encode(const void *data, size_t len);
/* in decoded (padding optional, whitespace and newlines ignored) into a
 * NUL-terminated buffer; -EINVAL when it is not base64. */
int base64_decode(const char *in, char **ret, size_t *ret_len);

#endif
