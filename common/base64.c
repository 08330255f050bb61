/* Base64 (see base64.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/base64.h"
#include "common/util.h"

char *base64_encode(const void *data, size_t len)
{
	char *out;

	if (len > (size_t)INT32_MAX / 4 * 3)
		return NULL;
	out = malloc(4 * ((len + 2) / 3) + 1);
	if (out)
		EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

int base64_decode(const char *in, char **ret, size_t *ret_len)
{
	size_t len = strlen(in);
	_cleanup_free_ char *out = NULL;
	EVP_ENCODE_CTX *ctx;
	int n1 = 0, n2 = 0;

	if (len > (size_t)INT32_MAX)
		return -EINVAL;
	out = malloc(len / 4 * 3 + 4);
	if (!out)
		return -ENOMEM;
	ctx = EVP_ENCODE_CTX_new();
	if (!ctx)
		return -ENOMEM;
	EVP_DecodeInit(ctx);
	if (EVP_DecodeUpdate(ctx, (unsigned char *)out, &n1, (const unsigned char *)in, (int)len) < 0 ||
	    EVP_DecodeFinal(ctx, (unsigned char *)out + n1, &n2) < 0) {
		EVP_ENCODE_CTX_free(ctx);
		return -EINVAL;
	}
	EVP_ENCODE_CTX_free(ctx);
	out[n1 + n2] = '\0';
	*ret_len = (size_t)(n1 + n2);
	*ret = TAKE_PTR(out);
	return 0;
}
