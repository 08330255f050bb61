/* libFuzzer target: the server side of SigV4 on arbitrary bytes, as
 * kanna-sim meets them. Input lines: Authorization header, request path,
 * query string; verified against a fixed request and canonicalised. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct sigv4_credentials keys[] = { { "AKIDEXAMPLE", "secret", NULL } };
	char *text = malloc(size + 1), *lines[3] = { "", "/", "" }, *p, *creq = NULL;
	struct sigv4_authorization auth;
	struct sigv4_header headers[] = {
		{ "Host", "example.amazonaws.com" },
		{ "X-Amz-Date", "20150830T123600Z" },
		{ "Content-Type", "application/x-www-form-urlencoded" },
	};
	char err[128];

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	p = text;
	for (int i = 0; i < 3 && p; i++) {
		char *nl = strchr(p, '\n');

		lines[i] = p;
		if (nl)
			*nl++ = '\0';
		p = nl;
	}
	struct sigv4_request req = {
		.method = "POST", .path = lines[1], .query = lines[2], .headers = headers,
		.n_headers = 3, .payload_sha256_hex = SIGV4_EMPTY_PAYLOAD_SHA256,
	};
	(void)sigv4_parse_authorization(lines[0], &auth);
	(void)sigv4_verify(&req, lines[0], keys, 1, 1440938160, NULL, err, sizeof(err));
	if (sigv4_canonical_request(&req, NULL, &creq) == 0)
		free(creq);
	req.path_literal = true;
	if (sigv4_canonical_request(&req, NULL, &creq) == 0)
		free(creq);
	free(text);
	return 0;
}
