/* A whole file into memory (see read-file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/read-file.h"
#include "common/util.h"

int read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (len > max) {
			close(fd);
			return -EFBIG;
		}
		/* Room for one more byte than max, to tell a file of max
		 * bytes from a longer one, and the NUL. */
		if (cap - len < 2) {
			size_t ncap = MIN(MAX(cap * 2, (size_t)4096), max + 2);
			char *nb = realloc(buf, ncap);

			if (!nb) {
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}
