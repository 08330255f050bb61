/*
 * Generates kanna-sim's CA and server certificate with OpenSSL (P-256 keys,
 * SHA-256 signatures, SAN 127.0.0.1, ::1, localhost). Called once by main.c;
 * the PEM strings feed libmicrohttpd and the kubeconfig. Never writes files.
 */
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "sim/tls.h"

static char *bio_to_string(BIO *bio)
{
	char *data;
	long n = BIO_get_mem_data(bio, &data);
	char *out = n >= 0 ? strndup(data, (size_t)n) : NULL;

	BIO_free(bio);
	return out;
}

static char *pem_cert(X509 *x)
{
	BIO *bio = BIO_new(BIO_s_mem());

	if (!bio || PEM_write_bio_X509(bio, x) != 1) {
		BIO_free(bio);
		return NULL;
	}
	return bio_to_string(bio);
}

static char *pem_key(EVP_PKEY *k)
{
	BIO *bio = BIO_new(BIO_s_mem());

	if (!bio || PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL) != 1) {
		BIO_free(bio);
		return NULL;
	}
	return bio_to_string(bio);
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -EINVAL;
	ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -EINVAL;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer,
		       EVP_PKEY *issuer_key, bool ca)
{
	X509 *x = X509_new();
	unsigned char serial[16];
	BIGNUM *bn = NULL;
	int r = 0;

	if (!x || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f;
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		goto fail;
	X509_set_version(x, 2);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 60L * 60 * 24 * SIM_TLS_VALID_DAYS);
	X509_set_pubkey(x, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(issuer ? issuer : x));
	if (ca) {
		r |= add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE");
		r |= add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
		r |= add_ext(x, x, NID_subject_key_identifier, "hash");
	} else {
		r |= add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE");
		r |= add_ext(x, issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
		r |= add_ext(x, issuer, NID_ext_key_usage, "serverAuth");
		r |= add_ext(x, issuer, NID_subject_alt_name,
			     "IP:127.0.0.1,IP:::1,DNS:localhost");
		r |= add_ext(x, issuer, NID_authority_key_identifier, "keyid:always");
	}
	if (r != 0 || X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()) <= 0)
		goto fail;
	BN_free(bn);
	return x;
fail:
	BN_free(bn);
	X509_free(x);
	return NULL;
}

int sim_tls_generate(struct sim_tls *tls)
{
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *key = EVP_EC_gen("P-256");
	X509 *ca = NULL, *cert = NULL;
	int r = -EIO;

	memset(tls, 0, sizeof(*tls));
	if (!ca_key || !key)
		goto out;
	ca = make_cert(ca_key, "kanna-sim-ca", NULL, NULL, true);
	cert = ca ? make_cert(key, "kanna-sim", ca, ca_key, false) : NULL;
	if (!cert)
		goto out;
	tls->ca_pem = pem_cert(ca);
	tls->cert_pem = pem_cert(cert);
	tls->key_pem = pem_key(key);
	if (tls->ca_pem && tls->cert_pem && tls->key_pem)
		r = 0;
	else
		sim_tls_clear(tls);
out:
	X509_free(ca);
	X509_free(cert);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return r;
}

void sim_tls_clear(struct sim_tls *tls)
{
	free(tls->ca_pem);
	if (tls->key_pem)
		OPENSSL_cleanse(tls->key_pem, strlen(tls->key_pem));
	free(tls->key_pem);
	free(tls->cert_pem);
	memset(tls, 0, sizeof(*tls));
}
