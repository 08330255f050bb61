/*
 * proto-gen: developer tool over the proto schema.
 *   proto-gen doc          print the field tables of proto/README.md
 *   proto-gen corpus DIR   write the fuzz seed corpus (one valid frame per
 *                          message type and size) into DIR
 * Not installed; both outputs are committed and checked by the tests.
 */
#include "config.h"

#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

#include "common/arena.h"
#include "proto/random.h"
#include "proto/schema.h"

/* Seed and sizes of the committed corpus: changing them rewrites it. */
#define CORPUS_SEED 3
static const uint32_t corpus_breadths[] = { 0, 1, 3 };

static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -errno;
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) == 0 ? 0 : -errno;
}

static int write_corpus(const char *dir)
{
	struct proto_rng rng = { .state = CORPUS_SEED };
	struct arena arena = { 0 };
	msgpack_sbuffer sbuf;
	int r = 0;

	msgpack_sbuffer_init(&sbuf);
	for (unsigned type = 0; type < proto_n_msg_types && r >= 0; type++)
		for (size_t i = 0; i < ARRAY_SIZE(corpus_breadths) && r >= 0; i++) {
			struct proto_error err;
			struct proto_msg m;
			char path[4096];

			arena_reset(&arena);
			msgpack_sbuffer_clear(&sbuf);
			r = proto_random_msg(&rng, &arena, type, corpus_breadths[i], &m);
			if (r >= 0)
				r = proto_encode(&m, &sbuf, &err);
			if (r < 0)
				break;
			snprintf(path, sizeof(path), "%s/%s-%u.msgpack", dir, proto_type_name(type),
				 corpus_breadths[i]);
			r = write_file(path, sbuf.data, sbuf.size);
			if (r < 0)
				fprintf(stderr, "Failed to write %s: %s\n", path, strerror(-r));
		}
	msgpack_sbuffer_destroy(&sbuf);
	arena_done(&arena);
	return r;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "doc") == 0) {
		proto_schema_markdown(stdout);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "corpus") == 0)
		return write_corpus(argv[2]) < 0 ? 1 : 0;
	fprintf(stderr, "usage: %s doc | corpus DIR\n", argv[0]);
	return 2;
}
