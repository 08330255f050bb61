/* common/: base64, read_file, the clocks and the string hash. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/read-file.h"

Test(base64, round_trips_with_padding_and_refuses_what_is_not_base64)
{
	char *enc = base64_encode("kanna\n", 6), *dec = NULL;
	size_t n = 0;

	cr_assert_str_eq(enc, "a2FubmEK");
	cr_assert_eq(base64_decode("a2Fu\nbmEK", &dec, &n), 0, "newlines are ignored");
	cr_assert_eq(n, 6);
	cr_assert_str_eq(dec, "kanna\n");
	free(dec);
	free(enc);
	enc = base64_encode("ab", 2);
	cr_assert_str_eq(enc, "YWI=");
	free(enc);
	cr_assert_eq(base64_decode("a*b=", &dec, &n), -EINVAL);
}

Test(read_file, reads_a_whole_file_and_refuses_one_over_its_bound)
{
	char path[] = "/tmp/kanna-read-file-XXXXXX", *buf = NULL;
	int fd = mkstemp(path);
	size_t n = 0;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "0123456789", 10), 10);
	close(fd);
	cr_assert_eq(read_file(path, 10, &buf, &n), 0);
	cr_assert_eq(n, 10);
	cr_assert_str_eq(buf, "0123456789");
	free(buf);
	cr_assert_eq(read_file(path, 9, &buf, &n), -EFBIG);
	unlink(path);
	cr_assert_eq(read_file(path, 9, &buf, &n), -ENOENT);
}

Test(clock, the_clocks_agree_on_their_units)
{
	uint64_t m = clock_monotonic_usec();
	int64_t ms = clock_realtime_ms(), ns = clock_realtime_ns();
	struct timespec later = clock_realtime_in_ms(1500);

	cr_assert_leq(m / 1000, clock_monotonic_ms());
	cr_assert_leq(ms, ns / 1000000);
	cr_assert_geq((int64_t)later.tv_sec * 1000 + later.tv_nsec / 1000000, ms + 1500);
	cr_assert_lt(later.tv_nsec, 1000000000L);
}

/* The published FNV-1a test vectors: names derived from it never change. */
Test(hash, fnv1a_matches_its_test_vectors_and_fields_are_separated)
{
	cr_assert_eq(hash_fnv1a64(""), 0xcbf29ce484222325ULL);
	cr_assert_eq(hash_fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
	cr_assert_eq(hash_fnv1a64("foobar"), 0x85944171f73967e8ULL);
	cr_assert_eq(hash_fnv1a32("a", 1), 0xe40c292cu);
	cr_assert_neq(hash_fnv1a64_field(hash_fnv1a64_field(HASH_FNV1A64_OFFSET, "ab"), "c"),
		      hash_fnv1a64_field(hash_fnv1a64_field(HASH_FNV1A64_OFFSET, "a"), "bc"));
}
