/*
 * State of the EC2NodeClass resolver shared by nodeclass.c (resolution,
 * status, events, refresh) and nodeclass-launch.c (launch configs, the
 * launch template cache and its garbage collection). Nothing else includes it.
 */
#ifndef KANNA_LAUNCHER_NODECLASS_INTERNAL_H
#define KANNA_LAUNCHER_NODECLASS_INTERNAL_H

#include "common/aws.h"
#include "launcher/nodeclass-ec2.h"
#include "launcher/nodeclass.h"

/* Karpenter re-resolves EC2NodeClasses every 5 minutes. */
#define NC_DEFAULT_REFRESH_USEC (5ULL * 60 * 1000 * 1000)
/* A resolution that failed for AWS's sake (throttled, 5xx, an answer that
 * could not be read) with no good one to keep is served this long, not a
 * whole refresh period: one bad answer must not stop launches for minutes. */
#define NC_TRANSIENT_RETRY_USEC (3ULL * 1000 * 1000)
#define NC_WHY_MAX 1024
#define NC_SSM_IDS_MAX (PROTO_MAX_SELECTOR_TERMS * NC_ALIAS_PARAMS_MAX)

/* A launch_config_request waiting for its NodeClass or template. */
struct nc_waiter {
	struct nc_waiter *next;
	struct proto_nodepool *nodepool; /* deep copy */
	char arch[16];
	unsigned variant;                /* enum nc_variant: the image it launches */
	struct launch_config cfg;        /* filled once the template name is known */
	launch_config_done_fn done;
	void *userdata;
};

struct nc_entry {
	struct nc_entry *next;
	struct proto_nodeclass *nc; /* deep copy of the latest spec seen */
	uint64_t spec_hash;
	bool observed;              /* from the replica: its status is ours to write */
	/* the resolution in flight */
	bool resolving, waiting_version;
	uint64_t gen;               /* answers of older generations are dropped */
	unsigned pending;           /* calls (and phases) still out */
	unsigned ssm_pending;
	struct nc_resolved work;
	struct nc_image candidates[NC_MAX_IMAGES];
	size_t n_candidates;
	struct {
		char id[NC_ID_MAX];
		unsigned variants; /* of the parameters that named it */
	} ssm_ids[NC_SSM_IDS_MAX];
	size_t n_ssm_ids;
	char work_why[_NC_COND_MAX][512];
	bool work_transient;        /* an AWS failure, not an empty match */
	/* the last result */
	bool resolved, ever_ok;
	uint64_t resolved_at;       /* CLOCK_MONOTONIC usec */
	uint64_t served_usec;       /* how long after resolved_at it is served */
	struct nc_resolved res;
	struct nc_condition_state conds[_NC_COND_MAX];
	int64_t ready_since;
	int error;                  /* 0 when Ready */
	char why[NC_WHY_MAX];
	char *status_written;       /* last status sent (times left out), for change detection */
	char profile_role[NC_NAME_MAX];
	bool profile_rechecked;     /* this pass read the profile again after LimitExceeded */
	struct nc_waiter *waiters;
	/* spec.userData, fetched by the launcher (not on the state feed):
	 * the text whose SHA-256 is user_data_sha256, or why it is missing */
	char *user_data;
	char user_data_sha256[65];
	char user_data_why[512];
};

enum nc_lt_state { NC_LT_CREATING, NC_LT_READY };

struct nc_template_entry {
	struct nc_template_entry *next;
	char name[NC_LAUNCH_TEMPLATE_NAME_MAX];
	enum nc_lt_state state;
	uint64_t last_used;          /* CLOCK_MONOTONIC usec */
	struct aws_query *create;    /* sent when DescribeLaunchTemplates finds none */
	struct nc_waiter *waiters;
};

/* One AWS or Kubernetes call in flight; r is NULL once the resolver is
 * gone and e once its entry is (the answer is then dropped). */
struct nc_call {
	struct nc_call *next, *prev;
	struct nodeclass_resolver *r;
	struct nc_entry *e;
	struct nc_template_entry *lt;
	uint64_t gen;
	int kind;
	char arg[NC_NAME_MAX];
	unsigned variants; /* CALL_SSM: of the image the parameter names */
};

struct nodeclass_resolver {
	struct loop *loop;
	struct aws_client *aws;
	struct kube_client *kube;
	struct kube_events *events;
	char *cluster_name, *cluster_endpoint, *cluster_ca, *cluster_dns, *service_cidr;
	char *default_instance_profile;
	char *k8s_version;
	bool version_pending;
	uint64_t refresh_usec;
	struct nc_entry *entries;
	struct nc_template_entry *templates;
	struct nc_call *calls;
	bool gc_running;
	char periodic_name[48];
};

struct nc_call *nc_call_new(struct nodeclass_resolver *r, struct nc_entry *e, int kind);
/* Unlinks and frees c; true when its answer still matters. */
bool nc_call_end(struct nc_call *c);
void nc_waiter_free(struct nc_waiter *w);
/* One call of e's resolution came back (nodeclass.c). */
void nc_step_done(struct nodeclass_resolver *r, struct nc_entry *e);
void nc_launch_config_clear(struct launch_config *cfg);

/* nodeclass-launch.c: serve one waiter from e's result (consumes w). */
void nc_serve(struct nodeclass_resolver *r, struct nc_entry *e, struct nc_waiter *w);
/* Deletes kanna's templates unused for longer than the refresh period. */
void nc_templates_gc(struct nodeclass_resolver *r);
void nc_templates_free(struct nodeclass_resolver *r);
/* Part of a resolution: GETs spec.userData when e->nc names a digest whose
 * text is not cached (counted in e->pending; answers of an older generation
 * are dropped). */
void nc_user_data_fetch(struct nodeclass_resolver *r, struct nc_entry *e);
/* The text to launch with in *ret (NULL: none); -EAGAIN while the text of
 * e->nc's digest is not fetched (e->user_data_why says why). */
int nc_user_data_of(const struct nc_entry *e, const char **ret);
/* amiFamily, else the family of the first alias, else Custom. */
enum ami_family nc_family_of(const struct proto_nodeclass *nc);

#endif
