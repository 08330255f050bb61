/* A whole file into memory, bounded. */
#ifndef KANNA_COMMON_READ_FILE_H
#define KANNA_COMMON_READ_FILE_H

#include <stddef.h>

/* The bytes of path, NUL-terminated (ret_len may be NULL). -EFBIG when the
 * file holds more than max bytes, -errno when it cannot be read. */
int read_file(const char *path, size_t max, char **ret, size_t *ret_len);

#endif
