/*
 * The simulator's TLS identity: a self-signed CA and a server certificate
 * for 127.0.0.1 / ::1 / localhost signed by it, generated with OpenSSL at
 * every start. kubeconfig carries the CA so kubectl verifies the server.
 */
#ifndef KANNA_SIM_TLS_H
#define KANNA_SIM_TLS_H

/* How long the generated certificates are valid; the sim restarts far sooner. */
#define SIM_TLS_VALID_DAYS 365

struct sim_tls {
	char *ca_pem;   /* CA certificate */
	char *cert_pem; /* server certificate */
	char *key_pem;  /* server private key (PKCS#8) */
};

int sim_tls_generate(struct sim_tls *tls);
void sim_tls_clear(struct sim_tls *tls);

#endif
