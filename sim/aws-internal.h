/*
 * Internals shared by sim/aws*.c: the simulated cloud's state (struct
 * sim_aws), the catalog, the request/response types every action handler
 * takes, and the small XML writer. Nothing outside sim/aws*.c includes it.
 * Handlers run with aws->lock held and never block.
 */
#ifndef KANNA_SIM_AWS_INTERNAL_H
#define KANNA_SIM_AWS_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/util.h"
#include "sim/aws.h"

#define EC2_XMLNS "http://ec2.amazonaws.com/doc/2016-11-15/"
#define STS_XMLNS "https://sts.amazonaws.com/doc/2011-06-15/"
#define SQS_XMLNS "http://queue.amazonaws.com/doc/2012-11-05/"
#define IAM_XMLNS "https://iam.amazonaws.com/doc/2010-05-08/"
/* The sim's one AWS account (the documentation example account). */
#define SIM_AWS_ACCOUNT_ID "111122223333"
/* Owner of the EKS-optimized AMIs in every commercial region. */
#define SIM_AWS_AMI_OWNER_ID "602401143452"
#define SIM_AWS_REGIONS_MAX 3
#define SIM_AWS_ZONES_PER_REGION 3
/* Kubernetes minor versions that have EKS AMIs and SSM aliases. */
#define SIM_AWS_K8S_MINOR_FIRST 28
#define SIM_AWS_K8S_MINOR_LAST 34
/* The timeline is for reports; beyond this many events it counts drops. */
#define SIM_AWS_TIMELINE_MAX 20000
/* Limits of one request, far above what any SDK sends. */
#define SIM_AWS_BODY_MAX (1024 * 1024)
#define SIM_AWS_PARAMS_MAX 4096
#define SIM_AWS_LIST_MAX 1000

struct aws_request;
struct aws_response;

enum aws_service {
	AWS_SERVICE_EC2,
	AWS_SERVICE_SSM,
	AWS_SERVICE_STS,
	AWS_SERVICE_SQS,
	AWS_SERVICE_PRICING,
	AWS_SERVICE_IAM,
	_AWS_SERVICE_MAX,
};

/* ---- catalog (aws-catalog.c) ---- */
struct aws_instance_type {
	char *name, *family, *category, *size;
	char *arch; /* Kubernetes name: amd64 | arm64 */
	char *hypervisor, *cpu_manufacturer, *gpu_name, *gpu_manufacturer;
	char *network_performance, *alloc_ephemeral_storage;
	char *accelerator_name, *accelerator_manufacturer; /* Neuron: "inferentia2", "aws" */
	unsigned accelerators, efa_interfaces;
	unsigned generation, vcpu, gpus, max_pods, cpu_clock_mhz;
	uint64_t memory_mib, gpu_memory_mib, alloc_memory_mib;
	unsigned network_mbps, ebs_mbps, local_nvme_gib;
	unsigned eni_max, eni_default_card_max, network_cards, ipv4_per_eni;
	unsigned alloc_cpu_millicores;
	bool bare_metal, encryption_in_transit;
	double od_price_us_east_1; /* < 0: no published price (not offered) */
};

struct aws_zone {
	char name[32];    /* us-west-2a */
	char zone_id[32]; /* usw2-az1 */
	char subnet_id[32];
	char cidr[24];
	unsigned index; /* 0..2 */
};

struct aws_region {
	char name[32];
	char vpc_id[32];
	char sg_id[32];
	double price_multiplier;
	struct aws_zone zones[SIM_AWS_ZONES_PER_REGION];
};

struct aws_catalog {
	struct aws_instance_type *types;
	size_t n_types;
	struct aws_region regions[SIM_AWS_REGIONS_MAX];
	size_t n_regions;
};

int aws_catalog_load(struct aws_catalog **ret, const char *path, uint64_t seed);
struct aws_catalog *aws_catalog_free(struct aws_catalog *c);
int aws_catalog_default_path(char **ret);
const struct aws_instance_type *aws_catalog_type(const struct aws_catalog *c, const char *name);
const struct aws_region *aws_catalog_region(const struct aws_catalog *c, const char *name);
const struct aws_zone *aws_catalog_zone(const struct aws_catalog *c, const char *name,
					const struct aws_region **ret_region);
const struct aws_zone *aws_catalog_subnet(const struct aws_catalog *c, const char *subnet_id,
					  const struct aws_region **ret_region);
/* Price per hour in the zone; < 0 when the type is not offered. */
double aws_catalog_price(const struct aws_region *r, const struct aws_zone *z,
			 const struct aws_instance_type *t, bool spot);
bool aws_type_offered(const struct aws_instance_type *t);
/* EC2's architecture name: x86_64 | arm64. */
const char *aws_type_ec2_arch(const struct aws_instance_type *t);
uint64_t aws_hash(const char *s, uint64_t seed);

/* ---- images (aws-images.c) ---- */
enum aws_ami_family {
	AMI_AL2,
	AMI_AL2023,
	AMI_BOTTLEROCKET,
	AMI_UBUNTU,      /* Canonical's EKS images (20.04) */
	AMI_WINDOWS2019, /* Windows Server Core, EKS optimized */
	AMI_WINDOWS2022,
	AMI_WINDOWS2025,
	_AMI_FAMILY_MAX
};
/* The EKS AMI variants: drivers for NVIDIA GPUs or AWS Neuron accelerators. */
enum aws_ami_variant { AMI_STANDARD, AMI_NVIDIA, AMI_NEURON, _AMI_VARIANT_MAX };
struct aws_image {
	char id[32];
	char name[128];
	char region[32];
	const char *arch; /* x86_64 | arm64 */
	enum aws_ami_family family;
	enum aws_ami_variant variant;
	unsigned k8s_minor;
};
int aws_images_build(struct sim_aws *aws);
const struct aws_image *aws_image_lookup(const struct sim_aws *aws, const char *region,
					 enum aws_ami_family family, const char *arch,
					 enum aws_ami_variant variant, unsigned k8s_minor);
/* node.kubernetes.io/windows-build of a Windows image, else NULL. */
const char *aws_image_windows_build(const struct aws_image *im);
/* which 0: the recommended/latest SSM alias, 1: the pinned one ("" if none). */
void aws_image_ssm_path(const struct aws_image *im, int which, char *out, size_t len);
const struct aws_image *aws_image_by_id(const struct sim_aws *aws, const char *region,
					const char *id);

/* ---- request parameters (aws-params.c) ---- */
struct aws_param {
	char *name;
	char *value;
};

struct aws_params {
	struct aws_param *v;
	size_t n, cap;
};

/* Appends a value (off > 0 continues the last value of the same name). */
int aws_params_add(struct aws_params *p, const char *name, const char *value,
		   size_t len, uint64_t off);
const char *aws_params_get(const struct aws_params *p, const char *name);
const char *aws_params_getf(const struct aws_params *p, const char *fmt, ...) _printf_(2, 3);
void aws_params_clear(struct aws_params *p);
/* Number of consecutive "<prefix>.N..." indexes present from 1. */
size_t aws_params_count(const struct aws_params *p, const char *prefix);
/* The values of "<prefix>.1".."<prefix>.N" (entries NULL where only
 * "<prefix>.K.Sub" exists); pointers into p. */
struct aws_list {
	const char **v;
	size_t n;
};
int aws_params_list(const struct aws_params *p, const char *prefix, struct aws_list *ret);
bool aws_list_has(const struct aws_list *l, const char *s);
void aws_list_clear(struct aws_list *l);
int aws_parse_uint(const char *s, unsigned long max, unsigned long *ret);

/* An EC2 Filter.N: name and values (pointers into the params). */
struct aws_filter {
	const char *name;
	const char **values;
	size_t n_values;
};

struct aws_filters {
	struct aws_filter *v;
	size_t n;
};
int aws_filters_parse(const struct aws_params *p, struct aws_filters *ret);
void aws_filters_clear(struct aws_filters *f);
const struct aws_filter *aws_filters_find(const struct aws_filters *f, const char *name);
/* Parses Filter.N and rejects names not in allowed (NULL-terminated; tag:K,
 * tag-key and tag-value too when tags): *handled with an error in resp. */
int ec2_filters_load(const struct aws_request *req, struct aws_response *resp,
		     const char *const *allowed, bool tags, struct aws_filters *ret,
		     bool *handled);
/* EC2 filter values match with * and ? wildcards. */
bool aws_filter_matches(const struct aws_filter *f, const char *value);

/* ---- request and response ---- */
struct aws_request {
	enum aws_service service;
	const char *region;
	const char *action;
	const struct aws_params *params; /* query protocol */
	json_t *json;                    /* JSON protocols (SSM, SQS) */
	bool json_protocol;              /* X-Amz-Target: errors in JSON too */
	const char *path;                /* request path: SQS query names the queue there */
	const char *endpoint;            /* "http://127.0.0.1:PORT" */
	char request_id[40];
	char region_buf[64];
};

struct aws_response {
	unsigned status;
	char *body;
	size_t len;
	const char *content_type;
	const char *query_error; /* SQS x-amzn-query-error header, or NULL */
};

void aws_response_clear(struct aws_response *resp);

/* ---- request shapes (aws-shapes.c) ---- */
int aws_shapes_load(struct sim_aws *aws);
void aws_shapes_clear(struct sim_aws *aws);
/* 1 with the first segment its action's input shape does not take in bad
 * (names in common pass whole), else 0. Query protocol; EC2 naming when
 * req->service is EC2. */
int aws_shapes_unknown_param(const struct sim_aws *aws, const struct aws_request *req,
			     const char *const *common, char *bad, size_t badlen);
/* JSON protocols: 1 with SerializationException (a member of the wrong JSON
 * type) or ValidationException (a required member missing) in resp, else 0. */
int aws_shapes_check_json(const struct sim_aws *aws, const struct aws_request *req,
			  struct aws_response *resp);
/* Renders a service error in the real shape; returns 0 (handled) or -ENOMEM. */
int aws_error(struct aws_response *resp, const struct aws_request *req, unsigned status,
	      const char *code, const char *fmt, ...) _printf_(5, 6);
int aws_error_missing(struct aws_response *resp, const struct aws_request *req,
		      const char *param);
int aws_json_reply(struct aws_response *resp, json_t *body);

/* ---- XML writer (aws-xml.c): escapes text, never parses ---- */
struct xml {
	FILE *f;
	char *buf;
	size_t len;
	bool failed;
};
int xml_begin(struct xml *x, const char *root, const char *xmlns);
void xml_open(struct xml *x, const char *tag);
void xml_close(struct xml *x, const char *tag);
void xml_leaf(struct xml *x, const char *tag, const char *text);
void xml_leaff(struct xml *x, const char *tag, const char *fmt, ...) _printf_(3, 4);
void xml_leaf_bool(struct xml *x, const char *tag, bool v);
void xml_empty(struct xml *x, const char *tag);
void xml_tags(struct xml *x, const char *set_tag, const struct sim_aws_tag *tags, size_t n);
/* Closes root and hands the document to resp; frees x on any failure. */
int xml_finish(struct xml *x, const char *root, struct aws_response *resp);
void xml_abort(struct xml *x);
/* A document piece without prolog or root, spliced in with xml_raw(). */
int xml_fragment_begin(struct xml *x);
int xml_fragment_end(struct xml *x, char **ret);
void xml_raw(struct xml *x, const char *s);
void format_iso8601(uint64_t ms, char out[32]);

/* ---- simulated cloud state ---- */
enum aws_instance_state {
	INSTANCE_PENDING,
	INSTANCE_RUNNING,
	INSTANCE_SHUTTING_DOWN,
	INSTANCE_TERMINATED,
};

struct aws_tags {
	struct sim_aws_tag *v;
	size_t n;
};
int aws_tags_set(struct aws_tags *t, const char *key, const char *value);
const char *aws_tags_get(const struct aws_tags *t, const char *key);
void aws_tags_clear(struct aws_tags *t);
/* Reads TagSpecification.N (ResourceType == resource_type) into t; -EINVAL
 * with the offending parameter in bad on a malformed or reserved key. */
int ec2_parse_tag_specs(const struct aws_params *p, const char *resource_type,
			struct aws_tags *t, char *bad, size_t badlen);
/* EC2 allows 50 user tags per resource. */
#define EC2_TAGS_MAX 50
/* Filters tag:K, tag-key, tag-value against a tag set. */
bool aws_tags_match_filters(const struct aws_tags *t, const struct aws_filters *f);

struct aws_instance {
	char id[24];
	char reservation_id[24];
	char image_id[32];
	char private_ip[20];
	char private_dns[96];
	char launch_template_id[24];
	const struct aws_instance_type *type;
	const struct aws_region *region;
	const struct aws_zone *zone;
	bool spot;
	bool never_boots; /* faults.never_boot held at launch */
	enum aws_instance_state state;
	uint64_t launch_ms, terminate_ms, state_change_ms, interrupt_at_ms;
	double price;
	struct aws_tags tags;
};

struct aws_launch_template {
	char id[24];
	char *name;
	char *image_id;
	char *user_data; /* LaunchTemplateData.UserData as sent (base64), or NULL */
	char region[32];
	uint64_t create_ms;
	struct aws_tags tags;
	/* Every LaunchTemplateData.* parameter as sent (the prefix cut), so
	 * that what a launch asked for — user data, block devices, metadata
	 * options — can be seen (GET /_sim/launch-templates). */
	struct aws_params data;
};

/* An IAM instance profile (aws-iam.c); role NULL while none is attached. */
struct aws_instance_profile {
	char id[32];
	char *name;
	char *path;
	char *role;
	uint64_t create_ms;
	struct aws_tags tags;
};

struct aws_fleet_record {
	char *client_token;
	char region[32];
	uint64_t params_hash;
	char fleet_id[48];
	char *result_xml; /* everything after requestId, replayed verbatim */
};

struct aws_ice_rule {
	char *instance_type; /* NULL = any */
	char *zone;          /* NULL = any */
	char *capacity_type; /* NULL = any */
	const char *error_code; /* what EC2 answers, from ice_error_codes */
};

struct aws_faults {
	struct aws_ice_rule *ice;
	size_t n_ice;
	double throttle_rate;      /* fraction of requests throttled */
	unsigned throttle_per_sec; /* request budget per second, 0 = unlimited */
	double error_rate;         /* fraction answered 5xx */
	/* Fraction of EC2 requests carried out whose answer is then lost:
	 * answered 500 InternalError. AWS documents that a 5xx may hide a
	 * request that succeeded (hence ClientToken); this is that case. */
	double lost_answer_rate;
	/* Fraction of EC2 requests carried out whose 200 answer arrives cut
	 * off in the middle (a connection dropped mid-body): the client cannot
	 * read what was done. */
	double garbled_answer_rate;
	unsigned latency_ms;       /* added to every AWS request */
	bool state_change_events;  /* queue "EC2 Instance State-change Notification" */
	/* Instance types whose instances, launched while this holds, never
	 * join the cluster: the kubelet-lite leaves their Node NotReady, as a
	 * broken bootstrap (AMI, user data) would on EC2. */
	char **never_boot;
	size_t n_never_boot;
};

/* Faults injected since the sim started (a new fault set does not reset
 * them), for /_sim/status: what hit, not what was asked for. */
struct aws_fault_counts {
	uint64_t throttle, internal_error, latency;
	uint64_t lost_answer; /* carried out, then answered 500 */
	uint64_t garbled_answer; /* carried out, then answered 200 with half a body */
	uint64_t insufficient_capacity; /* one per offering refused */
};

struct aws_sqs_message {
	char id[40];
	char receipt[64];
	char *body;
	uint64_t visible_at_ms;
};

struct aws_event {
	uint64_t ms;
	char *kind;
	char *detail;
};

struct sim_aws {
	pthread_mutex_t lock;
	char *access_key_id, *secret_access_key, *region, *cluster_name;
	unsigned pending_ms, shutdown_ms, interruption_ms;
	uint64_t seed, rng, id_counter;
	struct aws_catalog *catalog;
	struct aws_image *images;
	size_t n_images;
	struct aws_instance **instances;
	size_t n_instances, cap_instances;
	struct aws_launch_template **templates;
	size_t n_templates, cap_templates;
	struct aws_fleet_record *fleets;
	size_t n_fleets, cap_fleets;
	struct aws_instance_profile **profiles;
	size_t n_profiles, cap_profiles;
	struct aws_faults faults;
	struct aws_fault_counts injected;
	uint64_t throttle_window_sec;
	unsigned throttle_window_count;
	struct aws_sqs_message *queue;
	size_t n_queue, cap_queue;
	struct aws_event *timeline;
	size_t n_timeline, cap_timeline, timeline_dropped;
	json_t *models[_AWS_SERVICE_MAX]; /* botocore models (aws-shapes.c) */
	struct MHD_Daemon *mhd;
	uint16_t port;
	char endpoint[64];
	bool stopping;
};

uint64_t aws_rand(struct sim_aws *aws);
double aws_rand_unit(struct sim_aws *aws);
/* Deterministic ids: "<prefix><hex digits>" from the seed and a counter. */
void aws_new_id(struct sim_aws *aws, const char *prefix, unsigned hex_digits,
		char *out, size_t outlen);
void aws_new_uuid(struct sim_aws *aws, char out[40]);
void aws_timeline_add(struct sim_aws *aws, const char *kind, const char *fmt, ...)
	_printf_(3, 4);
/* Advances pending/shutting-down/interrupted instances to now. */
void aws_instances_refresh(struct sim_aws *aws, uint64_t now);
struct aws_instance *aws_instance_find(struct sim_aws *aws, const char *id);

struct aws_launch_spec {
	const struct aws_instance_type *type;
	const struct aws_region *region;
	const struct aws_zone *zone;
	bool spot;
	double price;
	const char *image_id;                          /* NULL: none */
	const struct aws_launch_template *launch_template; /* NULL: none */
	const struct aws_tags *tags;
	const char *system_tag_key, *system_tag_value; /* "aws:ec2:fleet-id", or NULL */
	const char *reservation_id;                    /* NULL: a new one */
};
/* Creates a pending instance; *ret stays owned by aws. */
int aws_instance_launch(struct sim_aws *aws, const struct aws_launch_spec *spec,
			struct aws_instance **ret);
struct xml;
void ec2_write_instance(struct xml *x, const struct sim_aws *aws, const struct aws_instance *i);
const char *aws_instance_state_name(enum aws_instance_state s);
double aws_instance_cost(const struct aws_instance *i, uint64_t now);
void aws_instance_free(struct aws_instance *i);
void aws_launch_template_free(struct aws_launch_template *lt);
/* [{launchTemplateId, launchTemplateName, region, launchTemplateData: {key: value}}] */
json_t *aws_launch_templates_json(struct sim_aws *aws);
void aws_instance_profile_free(struct aws_instance_profile *p);
struct aws_instance_profile *iam_profile_find(struct sim_aws *aws, const char *name);

/* ---- dispatch (aws-dispatch.c) and handlers ---- */
typedef int (*aws_handler_fn)(struct sim_aws *aws, const struct aws_request *req,
			      struct aws_response *resp);
/* Runs one authenticated request: faults, then the action's handler. */
int aws_dispatch(struct sim_aws *aws, struct aws_request *req, struct aws_response *resp);
/* Fault draws for one request; returns true and fills resp when it fails. */
/* Lock held, after an EC2 request was carried out: 1 when its answer is
 * to be lost (resp replaced by a 500) or garbled (a 200 cut off in the
 * middle of its body), 0 to send it as it is, < 0 on error. */
int aws_faults_lose_answer(struct sim_aws *aws, const struct aws_request *req,
			   struct aws_response *resp);
int aws_faults_apply(struct sim_aws *aws, const struct aws_request *req,
		     struct aws_response *resp, unsigned *ret_latency_ms);
/* The injected capacity error code for an offering, or NULL when it has capacity. */
const char *aws_faults_ice(const struct sim_aws *aws, const char *type, const char *zone, bool spot);
/* Do instances of this type launched now never join (fault neverBoot)? */
bool aws_faults_never_boot(const struct sim_aws *aws, const char *type);
int aws_faults_set_json(struct sim_aws *aws, const char *json, char *err, size_t errlen);
json_t *aws_faults_to_json(const struct sim_aws *aws);
json_t *aws_faults_injected_json(const struct sim_aws *aws);
void aws_faults_clear(struct aws_faults *f);
int aws_interrupt_instance(struct sim_aws *aws, const char *id, char *err, size_t errlen);
int aws_rebalance_instance(struct sim_aws *aws, const char *id, char *err, size_t errlen);
/* Queues one EventBridge event about i on the SQS queue; detail is stolen. */
int aws_event_enqueue(struct sim_aws *aws, const struct aws_instance *i,
		      const char *detail_type, json_t *detail);
/* Moves i to state at time ms: timeline, and a state-change event if enabled. */
void aws_instance_set_state(struct sim_aws *aws, struct aws_instance *i,
			    enum aws_instance_state state, uint64_t ms);
json_t *aws_status_json(struct sim_aws *aws);
/* /_sim/... requests; takes no lock (the caller holds it). */
int aws_admin_handle(struct sim_aws *aws, const char *url, const char *method,
		     const char *body, size_t len, struct aws_response *resp);
void aws_server_stop(struct sim_aws *aws);
/* SQS long poll: waits (lock not held) until a message is visible, the
 * request's WaitTimeSeconds pass or the server stops. */
void aws_sqs_wait(struct sim_aws *aws, const struct aws_request *req);

struct aws_launch_template *ec2_launch_template_find(struct sim_aws *aws, const char *region,
						     const char *id, const char *name);
int ec2_describe_instance_types(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_instance_type_offerings(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_availability_zones(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_subnets(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_security_groups(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_images(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_spot_price_history(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_create_launch_template(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_launch_templates(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_delete_launch_template(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_create_fleet(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_describe_instances(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_run_instances(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_terminate_instances(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ec2_create_tags(struct sim_aws *, const struct aws_request *, struct aws_response *);
int pricing_get_products(struct sim_aws *, const struct aws_request *, struct aws_response *);
int ssm_get_parameter(struct sim_aws *, const struct aws_request *, struct aws_response *);
int sts_get_caller_identity(struct sim_aws *, const struct aws_request *, struct aws_response *);
int sts_assume_role_with_web_identity(struct sim_aws *, const struct aws_request *, struct aws_response *);
int iam_get_instance_profile(struct sim_aws *, const struct aws_request *, struct aws_response *);
int iam_create_instance_profile(struct sim_aws *, const struct aws_request *, struct aws_response *);
int iam_add_role_to_instance_profile(struct sim_aws *, const struct aws_request *, struct aws_response *);
int iam_remove_role_from_instance_profile(struct sim_aws *, const struct aws_request *, struct aws_response *);
int iam_delete_instance_profile(struct sim_aws *, const struct aws_request *, struct aws_response *);
int sqs_get_queue_url(struct sim_aws *, const struct aws_request *, struct aws_response *);
int sqs_receive_message(struct sim_aws *, const struct aws_request *, struct aws_response *);
int sqs_delete_message(struct sim_aws *, const struct aws_request *, struct aws_response *);
int sqs_enqueue(struct sim_aws *aws, char *body_owned);
/* The admin's SendMessage: body (len bytes, any content SendMessage
 * accepts) queued as is; id gets the MessageId. -EINVAL with err set when
 * SQS would refuse the body. */
int sqs_send_raw(struct sim_aws *aws, const char *body, size_t len, char *id, size_t idlen,
		 char *err, size_t errlen);
int sqs_queue_url(const struct sim_aws *aws, const struct aws_request *req, char *out, size_t len);

/*
 * MaxResults bounds (min, max) and the page size without MaxResults, as
 * EC2 documents them per action; PAGE_ALL: one page holds everything, as
 * EC2 answers DescribeInstances/DescribeImages without MaxResults.
 */
#define PAGE_ALL SIZE_MAX
#define PAGE_INSTANCE_TYPES 5, 100, 100
#define PAGE_OFFERINGS 5, 1000, 1000
#define PAGE_SPOT_PRICES 1, 10000, 1000
#define PAGE_IMAGES 5, 1000, PAGE_ALL
#define PAGE_INSTANCES 5, 1000, PAGE_ALL
#define PAGE_LAUNCH_TEMPLATES 1, 200, 200
/* API_DescribeSubnets.html, API_DescribeSecurityGroups.html: "This value
 * can be between 5 and 1000. If this parameter is not specified, then all
 * items are returned." */
#define PAGE_SUBNETS 5, 1000, PAGE_ALL
#define PAGE_SECURITY_GROUPS 5, 1000, PAGE_ALL
/* Pagination helpers shared by the Describe* handlers. */
int aws_page_parse(const struct aws_request *req, struct aws_response *resp,
		   unsigned long min, unsigned long max, unsigned long dflt,
		   size_t *ret_start, size_t *ret_limit, bool *handled);
void aws_page_next_token(struct xml *x, size_t next);

#endif
