/*
 * Every size limit the proto codec enforces, in one place, each with the
 * reason for its value. The decoder rejects a frame that exceeds any of them
 * (naming the field and the limit) and the encoder refuses to produce one,
 * so a peer never receives what it would have to drop. Sockets set
 * ZMQ_MAXMSGSIZE to PROTO_MAX_FRAME_BYTES.
 */
#ifndef KANNA_PROTO_LIMITS_H
#define KANNA_PROTO_LIMITS_H

/* A full catalog (≈1,400 types × offerings × labels) is ≈2 MiB; a pending
 * batch of PROTO_MAX_PENDING_PODS pods of 2 KiB each is ≈10 MiB. */
#define PROTO_MAX_FRAME_BYTES (16u * 1024 * 1024)
/* msgpack objects per frame: ≈3× the largest real message (a 5,000-pod
 * batch is ≈300k objects, the full catalog ≈200k); caps the decoder's
 * record of the frame's objects at 32 MB (16 bytes per object). */
#define PROTO_MAX_FRAME_OBJECTS 2000000u
/* Decoded structs and strings per frame (the decoder's arena): the largest
 * legal message decodes to well under this; a decoder may lower it. */
#define PROTO_MAX_DECODED_BYTES (64u * 1024 * 1024)
/* Deepest declared path is ≈10 levels (pending_pods.pods[].pod_affinity
 * .selector.match_expressions[].values[]); unknown fields may nest a few
 * more, never deeper than this. */
#define PROTO_MAX_DEPTH 24

/* String lengths (bytes). */
#define PROTO_MAX_NAME_LEN 253         /* DNS-1123 subdomain: object names, namespaces, uids */
#define PROTO_MAX_KEY_LEN 317          /* label key: 253 prefix + '/' + 63 name */
#define PROTO_MAX_LABEL_VALUE_LEN 63   /* Kubernetes label value */
#define PROTO_MAX_VALUE_LEN 256        /* requirement values, AWS tag values, short values */
#define PROTO_MAX_ANNOTATION_LEN 4096  /* template annotations we carry (not arbitrary blobs) */
#define PROTO_MAX_TEXT_LEN 4096        /* human-readable reasons, errors, explanations */
#define PROTO_MAX_USER_DATA_LEN 16384  /* EC2 limit on user data: 16 KB */
#define PROTO_MAX_ID_LEN 128           /* plan ids, instance ids, provider ids, trace ids */

/* Counts. */
#define PROTO_MAX_LABELS 256           /* labels/selectors/tags per object; far above real use */
#define PROTO_MAX_RESOURCES 32         /* resource names per request/capacity list */
#define PROTO_MAX_REQUIREMENTS 64      /* requirements per term or NodePool */
#define PROTO_MAX_REQUIREMENT_VALUES 2048 /* "instance-type In [...]" may list the whole catalog (≈1,400) */
#define PROTO_MAX_TERMS 32             /* node selector terms (OR) per affinity */
#define PROTO_MAX_TOLERATIONS 64
#define PROTO_MAX_TAINTS 64
#define PROTO_MAX_SPREAD 16            /* topology spread constraints per pod */
#define PROTO_MAX_AFFINITY_TERMS 32    /* pod (anti-)affinity terms per kind */
#define PROTO_MAX_OWNER_REFS 16
#define PROTO_MAX_NAMESPACES 64        /* namespaces listed in a pod affinity term */
#define PROTO_MAX_VOLUMES 64           /* PVCs per pod */
#define PROTO_MAX_HOST_PORTS 64
#define PROTO_MAX_CONDITIONS 16        /* status conditions per object */
#define PROTO_MAX_FINALIZERS 16
#define PROTO_MAX_BUDGETS 16           /* disruption budgets per NodePool */
#define PROTO_MAX_REASONS 8            /* disruption reasons per budget */
#define PROTO_MAX_SELECTOR_TERMS 16    /* EC2NodeClass subnet/SG/AMI selector terms */
#define PROTO_MAX_BLOCK_DEVICES 16     /* block device mappings per EC2NodeClass */
#define PROTO_MAX_RESOLVED 128         /* resolved subnets / security groups / AMIs */
#define PROTO_MAX_PENDING_PODS 5000    /* pods per pending_pods message; the watcher splits larger batches */
#define PROTO_MAX_PLAN_NODECLAIMS 1000 /* NodeClaims per launch plan; the scheduler splits larger plans */
#define PROTO_MAX_CANDIDATES 60        /* instance types per NodeClaim: Karpenter's MaxInstanceTypes, the CreateFleet override budget */
#define PROTO_MAX_OFFERINGS 64         /* offerings per type: zones × capacity types */
#define PROTO_MAX_POD_KEYS 1024        /* pods planned for one NodeClaim: above the largest max-pods (737) */
#define PROTO_MAX_CATALOG_TYPES 2048   /* EC2 offers ≈1,400 instance types */
#define PROTO_MAX_DISRUPTION_NODES 100 /* Karpenter's multi-node consolidation considers at most 100 candidates */

#endif
