/*
 * Kubernetes protobuf request bodies (application/vnd.kubernetes.protobuf),
 * as client-go's typed clients send them: the magic "k8s\0", then a
 * runtime.Unknown whose typeMeta names the kind and whose raw bytes are the
 * object's generated message. kanna-sim decodes the kinds `kubectl create`'s
 * generator subcommands send (Namespace, ConfigMap, ServiceAccount,
 * Service, Deployment, PodDisruptionBudget; Pod and DeleteOptions for typed
 * clients) into the JSON the same object has, by the field numbers of
 * k8s.io/api's generated.proto (k8s-protobuf-schema.c). A field it does not
 * know is skipped when it holds only zero values (a newer client's unset
 * field) and refused (415) when it holds data, so nothing is dropped
 * silently.
 */
#ifndef KANNA_SIM_K8S_PROTOBUF_H
#define KANNA_SIM_K8S_PROTOBUF_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/k8s-resource.h"
#include "sim/k8s-store.h"

#define K8S_PROTOBUF_MAGIC "k8s\0"
#define K8S_PROTOBUF_MAGIC_LEN 4
/* Nesting deeper than any kind here has (a Deployment is 8 deep) is refused. */
#define K8S_PROTOBUF_MAX_DEPTH 32

/*
 * body → *ret (a new JSON object with apiVersion and kind). res is the
 * resource the request is for (its kind names the type in errors; a
 * custom resource gets upstream's 415). Returns 0, -EBADMSG (400
 * BadRequest in err: not protobuf, truncated, wrong wire types),
 * -EPROTONOSUPPORT (415 UnsupportedMediaType: a kind or field kanna-sim
 * does not decode) or -ENOMEM.
 */
int k8s_protobuf_decode(const void *body, size_t len, const struct k8s_resource *res,
			json_t **ret, struct k8s_error *err);

/* ---- schema (k8s-protobuf-schema.c) ----------------------------------- */

enum pb_type {
	PB_STRING,
	PB_BYTES,         /* base64, as Go's []byte */
	PB_INT32,
	PB_INT64,
	PB_BOOL,
	PB_MESSAGE,       /* nested message (field message) */
	PB_MAP_STRING,    /* map<string, string> */
	PB_MAP_BYTES,     /* map<string, bytes> */
	PB_MAP_QUANTITY,  /* map<string, resource.Quantity> */
	PB_MAP_TIME,      /* map<string, metav1.Time> */
	PB_QUANTITY,      /* resource.Quantity: its string */
	PB_INT_OR_STRING, /* intstr.IntOrString: a number or a string */
	PB_TIME,          /* metav1.Time: RFC 3339, the zero time is null */
};

enum pb_flags {
	PB_REPEATED = 1 << 0,
	/* A pointer or a field without omitempty: zero values stay in the JSON. */
	PB_KEEP_ZERO = 1 << 1,
};

struct pb_message;

struct pb_field {
	uint32_t number;
	const char *name; /* JSON name */
	enum pb_type type;
	unsigned flags;
	const struct pb_message *message; /* PB_MESSAGE */
};

struct pb_message {
	const char *name; /* as in generated.proto, for errors */
	const struct pb_field *fields;
	size_t n_fields;
};

/* The message for apiVersion/kind, NULL when kanna-sim does not decode it. */
const struct pb_message *k8s_protobuf_message(const char *api_version, const char *kind);

#endif
