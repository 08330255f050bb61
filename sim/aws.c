/*
 * kanna-sim's AWS side, lifecycle and shared state: sim_aws_new()/free(),
 * the seeded random source and deterministic ids, the timeline, instance
 * state transitions (pending -> running, shutting-down -> terminated, spot
 * interruptions), the instance walk for the kubelet-lite and aws.env.
 * Called by sim/main.c and by every handler (with aws->lock held); it never
 * speaks HTTP.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "sim/aws-internal.h"

/* EC2 takes seconds to start and stop an instance; short enough for demos. */
#define DEFAULT_PENDING_MS 2000
#define DEFAULT_SHUTDOWN_MS 2000
/* AWS terminates a spot instance two minutes after the interruption warning. */
#define DEFAULT_INTERRUPTION_MS (120 * 1000)
#define DEFAULT_REGION "us-west-2"
#define DEFAULT_CLUSTER "kanna"

void sim_aws_config_init(struct sim_aws_config *cfg)
{
	*cfg = (struct sim_aws_config){
		.region = DEFAULT_REGION,
		.cluster_name = DEFAULT_CLUSTER,
		.seed = 1,
		.pending_ms = DEFAULT_PENDING_MS,
		.shutdown_ms = DEFAULT_SHUTDOWN_MS,
		.interruption_ms = DEFAULT_INTERRUPTION_MS,
	};
}

/* splitmix64: tiny, seedable, good enough for fault draws and ids. */
uint64_t aws_rand(struct sim_aws *aws)
{
	uint64_t z = (aws->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double aws_rand_unit(struct sim_aws *aws)
{
	return (double)(aws_rand(aws) >> 11) / (double)(1ULL << 53);
}

void aws_new_id(struct sim_aws *aws, const char *prefix, unsigned hex_digits,
		char *out, size_t outlen)
{
	uint64_t v = aws_rand(aws);

	if (hex_digits < 16)
		v &= (1ULL << (hex_digits * 4)) - 1;
	snprintf(out, outlen, "%s%0*" PRIx64, prefix, (int)hex_digits, v);
}

void aws_new_uuid(struct sim_aws *aws, char out[40])
{
	uint64_t a = aws_rand(aws), b = aws_rand(aws);

	snprintf(out, 40, "%08" PRIx64 "-%04" PRIx64 "-4%03" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
		 a >> 32, (a >> 16) & 0xffff, a & 0xfff, (uint64_t)((b >> 48 & 0x3fff) | 0x8000),
		 (uint64_t)(b & 0xffffffffffffULL));
}

void aws_timeline_add(struct sim_aws *aws, const char *kind, const char *fmt, ...)
{
	struct aws_event *e;
	char *detail = NULL;
	va_list ap;
	int r;

	if (aws->n_timeline >= SIM_AWS_TIMELINE_MAX) {
		aws->timeline_dropped++;
		return;
	}
	if (aws->n_timeline == aws->cap_timeline) {
		size_t cap = aws->cap_timeline ? aws->cap_timeline * 2 : 64;

		e = realloc(aws->timeline, cap * sizeof(*e));
		if (!e) {
			aws->timeline_dropped++;
			return;
		}
		aws->timeline = e;
		aws->cap_timeline = cap;
	}
	va_start(ap, fmt);
	r = vasprintf(&detail, fmt, ap);
	va_end(ap);
	e = &aws->timeline[aws->n_timeline];
	e->kind = strdup(kind);
	if (r < 0 || !e->kind) {
		free(e->kind);
		free(r < 0 ? NULL : detail);
		aws->timeline_dropped++;
		return;
	}
	e->detail = detail;
	e->ms = (uint64_t)clock_realtime_ms();
	aws->n_timeline++;
}

const char *aws_instance_state_name(enum aws_instance_state s)
{
	static const char *const names[] = {
		[INSTANCE_PENDING] = "pending",
		[INSTANCE_RUNNING] = "running",
		[INSTANCE_SHUTTING_DOWN] = "shutting-down",
		[INSTANCE_TERMINATED] = "terminated",
	};
	return names[s];
}

void aws_instance_set_state(struct sim_aws *aws, struct aws_instance *i,
			    enum aws_instance_state state, uint64_t ms)
{
	i->state = state;
	i->state_change_ms = ms;
	if (state == INSTANCE_SHUTTING_DOWN)
		i->terminate_ms = ms;
	if (state != INSTANCE_RUNNING)
		aws_timeline_add(aws, aws_instance_state_name(state), "%s %s", i->id, i->type->name);
	/* Best effort: a lost event is what EventBridge may do too. */
	if (aws->faults.state_change_events)
		(void)aws_event_enqueue(aws, i, "EC2 Instance State-change Notification",
					json_pack("{s:s, s:s}", "instance-id", i->id,
						  "state", aws_instance_state_name(state)));
}

void aws_instances_refresh(struct sim_aws *aws, uint64_t now)
{
	for (size_t k = 0; k < aws->n_instances; k++) {
		struct aws_instance *i = aws->instances[k];

		if (i->interrupt_at_ms && now >= i->interrupt_at_ms &&
		    (i->state == INSTANCE_PENDING || i->state == INSTANCE_RUNNING))
			aws_instance_set_state(aws, i, INSTANCE_SHUTTING_DOWN, i->interrupt_at_ms);
		if (i->state == INSTANCE_PENDING && now >= i->launch_ms + aws->pending_ms)
			aws_instance_set_state(aws, i, INSTANCE_RUNNING, i->launch_ms + aws->pending_ms);
		if (i->state == INSTANCE_SHUTTING_DOWN && now >= i->terminate_ms + aws->shutdown_ms)
			aws_instance_set_state(aws, i, INSTANCE_TERMINATED, i->terminate_ms + aws->shutdown_ms);
	}
}

struct aws_instance *aws_instance_find(struct sim_aws *aws, const char *id)
{
	for (size_t k = 0; id && k < aws->n_instances; k++)
		if (streq(aws->instances[k]->id, id))
			return aws->instances[k];
	return NULL;
}

/* Billed from launch until termination was requested, at the launch price. */
double aws_instance_cost(const struct aws_instance *i, uint64_t now)
{
	uint64_t end = i->terminate_ms ? i->terminate_ms : now;

	if (end <= i->launch_ms)
		return 0;
	return i->price * (double)(end - i->launch_ms) / 3600000.0;
}

void aws_instance_free(struct aws_instance *i)
{
	if (!i)
		return;
	aws_tags_clear(&i->tags);
	free(i);
}

void aws_launch_template_free(struct aws_launch_template *lt)
{
	if (!lt)
		return;
	free(lt->name);
	free(lt->image_id);
	free(lt->user_data);
	aws_tags_clear(&lt->tags);
	aws_params_clear(&lt->data);
	free(lt);
}

static int credentials_init(struct sim_aws *aws, const struct sim_aws_config *cfg)
{
	char buf[64];

	if (cfg->access_key_id)
		aws->access_key_id = strdup(cfg->access_key_id);
	else {
		/* Access key ids are 20 upper-case characters starting AKIA. */
		snprintf(buf, sizeof(buf), "AKIASIM%013" PRIX64,
			 (uint64_t)(aws_hash("access-key", cfg->seed) & 0xfffffffffffffULL));
		aws->access_key_id = strdup(buf);
	}
	if (cfg->secret_access_key)
		aws->secret_access_key = strdup(cfg->secret_access_key);
	else {
		snprintf(buf, sizeof(buf), "simSecret%016" PRIx64 "%016" PRIx64,
			 aws_hash("secret-a", cfg->seed), aws_hash("secret-b", cfg->seed));
		aws->secret_access_key = strdup(buf);
	}
	return aws->access_key_id && aws->secret_access_key ? 0 : -ENOMEM;
}

/* Catalog, region check, AMIs and initial faults of a fresh sim. */
static int sim_aws_load(struct sim_aws *aws, const struct sim_aws_config *cfg)
{
	char *path = NULL, err[256];
	int r;

	if (cfg->catalog_path)
		path = strdup(cfg->catalog_path);
	else if (aws_catalog_default_path(&path) < 0)
		return log_error_errno(ENOENT, "Failed to find instance-types.tsv in %s or %s/data",
				       KANNA_DATADIR, KANNA_SRCDIR);
	if (!path)
		return -ENOMEM;
	r = aws_catalog_load(&aws->catalog, path, cfg->seed);
	if (r < 0)
		log_error_errno(r, "Failed to load instance catalog %s: %m", path);
	free(path);
	if (r < 0)
		return r;
	if (!aws_catalog_region(aws->catalog, aws->region))
		return log_error_errno(EINVAL, "Failed to use region %s: not simulated (us-west-2, eu-west-1, ap-northeast-1)",
				       aws->region);
	r = aws_images_build(aws);
	if (r < 0)
		return r;
	r = aws_shapes_load(aws);
	if (r < 0)
		return r;
	if (cfg->faults_json) {
		r = aws_faults_set_json(aws, cfg->faults_json, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Failed to parse the initial AWS faults: %s", err);
	}
	return 0;
}

int sim_aws_new(struct sim_aws **ret, const struct sim_aws_config *cfg)
{
	struct sim_aws *aws;
	int r;

	aws = calloc(1, sizeof(*aws));
	if (!aws)
		return -ENOMEM;
	pthread_mutex_init(&aws->lock, NULL);
	aws->seed = aws->rng = cfg->seed;
	aws->pending_ms = cfg->pending_ms;
	aws->shutdown_ms = cfg->shutdown_ms;
	aws->interruption_ms = cfg->interruption_ms;
	aws->region = strdup(cfg->region ?: DEFAULT_REGION);
	aws->cluster_name = strdup(cfg->cluster_name ?: DEFAULT_CLUSTER);
	r = credentials_init(aws, cfg);
	if (r >= 0 && (!aws->region || !aws->cluster_name))
		r = -ENOMEM;
	if (r >= 0)
		r = sim_aws_load(aws, cfg);
	if (r < 0) {
		sim_aws_free(aws);
		return r;
	}
	*ret = aws;
	return 0;
}

static void state_free(struct sim_aws *aws)
{
	for (size_t i = 0; i < aws->n_instances; i++)
		aws_instance_free(aws->instances[i]);
	free(aws->instances);
	for (size_t i = 0; i < aws->n_templates; i++)
		aws_launch_template_free(aws->templates[i]);
	free(aws->templates);
	for (size_t i = 0; i < aws->n_profiles; i++)
		aws_instance_profile_free(aws->profiles[i]);
	free(aws->profiles);
	for (size_t i = 0; i < aws->n_fleets; i++) {
		free(aws->fleets[i].client_token);
		free(aws->fleets[i].result_xml);
	}
	free(aws->fleets);
	for (size_t i = 0; i < aws->n_queue; i++)
		free(aws->queue[i].body);
	free(aws->queue);
	for (size_t i = 0; i < aws->n_timeline; i++) {
		free(aws->timeline[i].kind);
		free(aws->timeline[i].detail);
	}
	free(aws->timeline);
	aws_faults_clear(&aws->faults);
}

struct sim_aws *sim_aws_free(struct sim_aws *aws)
{
	if (!aws)
		return NULL;
	aws_server_stop(aws);
	state_free(aws);
	free(aws->images);
	aws_shapes_clear(aws);
	aws_catalog_free(aws->catalog);
	free(aws->access_key_id);
	free(aws->secret_access_key);
	free(aws->region);
	free(aws->cluster_name);
	pthread_mutex_destroy(&aws->lock);
	free(aws);
	return NULL;
}

uint16_t sim_aws_port(const struct sim_aws *aws)
{
	return aws->port;
}

int sim_aws_set_faults(struct sim_aws *aws, const char *json, char *err, size_t errlen)
{
	int r;

	pthread_mutex_lock(&aws->lock);
	r = aws_faults_set_json(aws, json, err, errlen);
	pthread_mutex_unlock(&aws->lock);
	return r;
}

static void instance_info(const struct sim_aws *aws, const struct aws_instance *i,
			  struct sim_aws_instance_info *info)
{
	const struct aws_image *im = aws_image_by_id(aws, i->region->name, i->image_id);
	const char *build = im ? aws_image_windows_build(im) : NULL;

	*info = (struct sim_aws_instance_info){
		.id = i->id,
		.instance_type = i->type->name,
		.region = i->region->name,
		.zone = i->zone->name,
		.zone_id = i->zone->zone_id,
		.capacity_type = i->spot ? "spot" : "on-demand",
		.state = aws_instance_state_name(i->state),
		.image_id = i->image_id,
		.subnet_id = i->zone->subnet_id,
		.private_ip = i->private_ip,
		.private_dns_name = i->private_dns,
		.arch = i->type->arch,
		.os = build ? "windows" : "linux",
		.windows_build = build,
		.launch_time_ms = i->launch_ms,
		.never_boots = i->never_boots,
		.terminate_time_ms = i->terminate_ms,
		.price_per_hour = i->price,
		.vcpu = i->type->vcpu,
		.memory_mib = i->type->memory_mib,
		.max_pods = i->type->max_pods,
		.gpus = i->type->gpus,
		.alloc_cpu_millicores = i->type->alloc_cpu_millicores,
		.alloc_memory_mib = i->type->alloc_memory_mib,
		.tags = i->tags.v,
		.n_tags = i->tags.n,
	};
}

int sim_aws_foreach_instance(struct sim_aws *aws, sim_aws_instance_fn fn, void *userdata)
{
	struct sim_aws_instance_info info;
	int r = 0;

	pthread_mutex_lock(&aws->lock);
	aws_instances_refresh(aws, (uint64_t)clock_realtime_ms());
	for (size_t k = 0; k < aws->n_instances && r == 0; k++) {
		instance_info(aws, aws->instances[k], &info);
		r = fn(&info, userdata);
	}
	pthread_mutex_unlock(&aws->lock);
	return r;
}

/* One shell word in single quotes ('\'' for a quote inside). */
static void shell_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

int sim_aws_write_env(struct sim_aws *aws, FILE *f)
{
	static const char *const services[] = { "EC2", "SSM", "STS", "SQS", "PRICING", "IAM" };
	struct aws_request req = { .endpoint = aws->endpoint, .region = aws->region };
	char queue[256];

	if (aws->port == 0)
		return -ENOTCONN;
	fprintf(f, "# kanna-sim AWS endpoint: every service on one loopback port (plain HTTP).\n");
	fprintf(f, "export AWS_ENDPOINT_URL=");
	shell_quote(f, aws->endpoint);
	for (size_t i = 0; i < ARRAY_SIZE(services); i++) {
		fprintf(f, "\nexport AWS_ENDPOINT_URL_%s=", services[i]);
		shell_quote(f, aws->endpoint);
	}
	fprintf(f, "\nexport AWS_REGION=");
	shell_quote(f, aws->region);
	fprintf(f, "\nexport AWS_DEFAULT_REGION=");
	shell_quote(f, aws->region);
	fprintf(f, "\nexport AWS_ACCESS_KEY_ID=");
	shell_quote(f, aws->access_key_id);
	fprintf(f, "\nexport AWS_SECRET_ACCESS_KEY=");
	shell_quote(f, aws->secret_access_key);
	/* kanna's own settings (Karpenter's CLUSTER_NAME and INTERRUPTION_QUEUE,
	 * the queue's name) so that the daemons find the sim's discovery tags
	 * and interruption queue with no manual step. */
	fprintf(f, "\nexport KANNA_CLUSTER_NAME=");
	shell_quote(f, aws->cluster_name);
	fprintf(f, "\nexport KANNA_INTERRUPTION_QUEUE=");
	shell_quote(f, aws->cluster_name);
	if (sqs_queue_url(aws, &req, queue, sizeof(queue)) >= 0) {
		fprintf(f, "\nexport KANNA_SIM_INTERRUPTION_QUEUE_URL=");
		shell_quote(f, queue);
	}
	fputc('\n', f);
	return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
