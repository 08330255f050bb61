/*
 * main() for fuzz targets outside a libFuzzer build: feeds every file of the
 * seed corpus (FUZZ_CORPUS, or the paths given) to LLVMFuzzerTestOneInput, so
 * gcc builds run each decoder over its corpus as an ordinary test.
 */
#include "config.h"

#ifndef KANNA_FUZZING
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) {
		fprintf(stderr, "Failed to open %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		return -1;
	}
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int run_path(const char *path, int *count)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char child[4096];
	int r = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "Failed to stat %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return run_file(path);
	}
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
		if (run_path(child, count) < 0)
			r = -1;
	}
	closedir(d);
	return r;
}

int main(int argc, char **argv)
{
	int count = 0, r = 0;

	if (argc < 2) {
#ifdef FUZZ_CORPUS
		r = run_path(FUZZ_CORPUS, &count);
#else
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
#endif
	}
	for (int i = 1; i < argc; i++)
		if (run_path(argv[i], &count) < 0)
			r = -1;
	printf("%d input(s) run, %s\n", count, r < 0 ? "with errors" : "clean");
	return r < 0 || count == 0 ? 1 : 0;
}
#endif
