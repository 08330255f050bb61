/*
 * The guard of one process's sockets (common/sock-guard.c), used by
 * common/sock.c only: the ZAP handler that checks each connecting peer's
 * uid/gid, the per-socket policies it checks against, and binding ipc
 * endpoints with an explicit file mode. The public face is struct
 * sock_access in common/sock.h.
 */
#ifndef KANNA_COMMON_SOCK_GUARD_H
#define KANNA_COMMON_SOCK_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/loop.h"
#include "common/sock.h"

struct sock_guard;

/*
 * With a loop and an access (a daemon), binds the ZAP handler
 * (inproc://zeromq.zap.01) in the context zmq and watches it on loop: it
 * must exist before any socket with a ZAP domain is bound, or libzmq lets
 * every peer in unchecked. The handshake of every peer then waits for the
 * loop, so a process that blocks on a socket outside its loop (tests,
 * tools) gets no ZAP: access NULL, sockets 0600 only.
 */
int sock_guard_new(struct sock_guard **ret, void *zmq, struct loop *loop,
		   const struct sock_access *access);
/* Close before zmq_ctx_term(). */
struct sock_guard *sock_guard_free(struct sock_guard *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct sock_guard *, sock_guard_free);
/* What `domain` admits besides root and our uid (see sock_admit()). */
int sock_guard_admit(struct sock_guard *g, const char *domain, const char *roles);
/*
 * Binds zsock to url. An ipc endpoint gets the ZAP domain `domain` (the
 * socket's name), the mode 0600 / 0660 and the group of the sockets (of the
 * tap when tap is true), set while binding through the umask and again
 * explicitly; the ZAP domain only when g runs a ZAP handler.
 */
int sock_guard_bind(struct sock_guard *g, void *zsock, const char *domain, const char *url,
		    bool tap);
uint64_t sock_guard_refused(const struct sock_guard *g);

#endif
