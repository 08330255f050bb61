/*
 * Envelope and hello helpers every daemon uses: stamp an outgoing message,
 * and check the hello that opens every connection (STYLE 12: a peer of
 * another major version, the wrong role or another shard count is refused
 * loudly, never guessed at). Pure functions over proto structs.
 */
#include "common/clock.h"
#include "config.h"

#include <time.h>

#include "proto/schema.h"

void proto_msg_init(struct proto_msg *m, enum proto_msg_type type, enum proto_process sender,
		    uint32_t shard, uint64_t seq)
{
	*m = (struct proto_msg){ .version_major = PROTO_VERSION_MAJOR,
				 .version_minor = PROTO_VERSION_MINOR };
	m->env.type = (uint8_t)type;
	m->env.sender = (uint8_t)sender;
	m->env.sender_shard = shard;
	m->env.seq = seq;
	m->env.send_time_ns = clock_realtime_ns();
}

void proto_hello_init(struct proto_msg *m, enum proto_process role, uint32_t shard,
		      uint32_t n_shards, const char *instance, uint32_t pid)
{
	proto_msg_init(m, PROTO_MSG_HELLO, role, shard, 0);
	m->body.hello = (struct proto_hello){
		.version_major = PROTO_VERSION_MAJOR, .version_minor = PROTO_VERSION_MINOR,
		.role = (uint8_t)role, .shard = shard, .n_shards = n_shards,
		.instance = (char *)instance, .pid = pid,
	};
}

int proto_hello_verify(const struct proto_msg *m, enum proto_process want_role,
		       uint32_t want_n_shards, struct proto_error *err)
{
	const struct proto_hello *h = &m->body.hello;

	if (m->env.type != PROTO_MSG_HELLO)
		return proto_fail(err, NULL, PROTO_E_UNKNOWN_TYPE,
				  "hello: connection opened with %s instead of hello",
				  proto_type_name(m->env.type) ?: "an unknown message");
	if (h->version_major != PROTO_VERSION_MAJOR)
		return proto_fail(err, NULL, PROTO_E_VERSION,
				  "hello: peer speaks protocol %u.%u, this build %d.%d",
				  h->version_major, h->version_minor, PROTO_VERSION_MAJOR,
				  PROTO_VERSION_MINOR);
	if (h->role != want_role)
		return proto_fail(err, NULL, PROTO_E_RANGE, "hello: peer is %s, expected %s",
				  proto_process_name(h->role) ?: "unknown", proto_process_name(want_role));
	if (want_n_shards && h->n_shards != want_n_shards)
		return proto_fail(err, NULL, PROTO_E_RANGE,
				  "hello: peer runs %u scheduler shard(s), this process expects %u",
				  h->n_shards, want_n_shards);
	if (h->n_shards && h->shard >= h->n_shards)
		return proto_fail(err, NULL, PROTO_E_RANGE, "hello: peer claims shard %u of %u",
				  h->shard, h->n_shards);
	return 0;
}
