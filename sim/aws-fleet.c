/*
 * EC2 CreateFleet (Type=instant) in kanna-sim: reads LaunchTemplateConfigs
 * and their Overrides, orders the valid overrides by the allocation strategy
 * (lowest-price, price-capacity-optimized, capacity-optimized: cheapest
 * first; prioritized, capacity-optimized-prioritized: Priority, then price),
 * launches TotalTargetCapacity instances from the first override that has
 * capacity, and reports per-override failures (injected
 * InsufficientInstanceCapacity, bad type/subnet/AMI) in <errorSet>.
 * ClientToken makes it idempotent: the same token replays the same result
 * and never launches twice. Called by aws_dispatch() with the lock held.
 */
#include <math.h>
#include <stdarg.h>

#include "sim/aws-internal.h"

/* A single instant fleet launches at most this many instances. */
#define FLEET_CAPACITY_MAX 1000

struct candidate {
	size_t cfg, ovr; /* 1-based indexes of the request */
	const struct aws_launch_template *lt;
	const struct aws_instance_type *type;
	const struct aws_region *reg;
	const struct aws_zone *zone;
	const char *subnet_param, *az_param, *image_id;
	bool image_overridden;
	double priority;
	double price[2]; /* [0] on-demand, [1] spot */
	const char *ice[2]; /* injected capacity error per capacity type, or NULL */
	const char *error_code;
	char error_msg[256];
	/* instances launched from it, per capacity type */
	char (*ids[2])[24];
	size_t n_ids[2];
};

struct fleet {
	struct candidate *c;
	size_t n;
	bool prioritized[2];
	char fleet_id[48];
};

static void fleet_clear(struct fleet *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->c[i].ids[0]);
		free(f->c[i].ids[1]);
	}
	free(f->c);
	*f = (struct fleet){ 0 };
}

/* Marks the override failed (its errorSet entry); returns 0 for chaining. */
static _printf_(3, 4) int candidate_error(struct candidate *c, const char *code,
					   const char *fmt, ...)
{
	va_list ap;

	c->error_code = code;
	va_start(ap, fmt);
	vsnprintf(c->error_msg, sizeof(c->error_msg), fmt, ap);
	va_end(ap);
	return 0;
}

/* Resolves one override; problems become its errorSet entry, not a failure. */
static int candidate_resolve(struct sim_aws *aws, const struct aws_request *req,
			      struct candidate *c)
{
	const char *type = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.Overrides.%zu.InstanceType", c->cfg, c->ovr);
	const char *prio = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.Overrides.%zu.Priority", c->cfg, c->ovr);
	const char *img = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.Overrides.%zu.ImageId", c->cfg, c->ovr);
	const struct aws_region *in = NULL;
	const struct aws_image *im;
	char *end;

	c->subnet_param = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.Overrides.%zu.SubnetId", c->cfg, c->ovr);
	c->az_param = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.Overrides.%zu.AvailabilityZone", c->cfg, c->ovr);
	c->priority = HUGE_VAL;
	if (prio) {
		c->priority = strtod(prio, &end);
		if (*end || !isfinite(c->priority) || c->priority < 0)
			return candidate_error(c, "InvalidParameterValue", "Invalid Priority '%s'", prio);
	}
	c->type = aws_catalog_type(aws->catalog, type);
	if (!c->type)
		return candidate_error(c, "InvalidParameterValue",
				       "The instance type '%s' does not exist", type ? type : "");
	if (!aws_type_offered(c->type))
		return candidate_error(c, "Unsupported",
				       "The requested configuration is currently not supported (%s has no price here).",
				       type);
	if (c->subnet_param) {
		c->zone = aws_catalog_subnet(aws->catalog, c->subnet_param, &in);
		if (!c->zone || !streq(in->name, req->region))
			return candidate_error(c, "InvalidSubnetID.NotFound",
					       "The subnet ID '%s' does not exist", c->subnet_param);
		/* Both named: they must agree (refused rather than guessed). */
		if (c->az_param && !streq(c->az_param, c->zone->name))
			return candidate_error(c, "InvalidParameterCombination",
					       "The subnet '%s' is not in availability zone '%s'",
					       c->subnet_param, c->az_param);
	} else if (c->az_param) {
		c->zone = aws_catalog_zone(aws->catalog, c->az_param, &in);
		if (!c->zone || !streq(in->name, req->region))
			return candidate_error(c, "InvalidParameterValue",
					       "Invalid availability zone: [%s]", c->az_param);
	} else {
		/* No placement: the region's first zone, like a default subnet. */
		in = aws_catalog_region(aws->catalog, req->region);
		c->zone = &in->zones[0];
	}
	c->reg = in;
	c->image_overridden = img != NULL;
	c->image_id = img ? img : c->lt ? c->lt->image_id : NULL;
	im = c->image_id ? aws_image_by_id(aws, req->region, c->image_id) : NULL;
	if (c->image_id && !im)
		return candidate_error(c, "InvalidAMIID.NotFound",
				       "The image id '[%s]' does not exist", c->image_id);
	if (im && !streq(im->arch, aws_type_ec2_arch(c->type)))
		return candidate_error(c, "InvalidParameterValue",
				       "The architecture of the AMI does not match the architecture of instance type %s.",
				       c->type->name);
	c->price[0] = aws_catalog_price(c->reg, c->zone, c->type, false);
	c->price[1] = aws_catalog_price(c->reg, c->zone, c->type, true);
	return 0;
}

static int candidates_collect(struct sim_aws *aws, const struct aws_request *req,
			      struct fleet *f, size_t n_cfg)
{
	for (size_t i = 1; i <= n_cfg; i++) {
		const char *lt_id = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.LaunchTemplateSpecification.LaunchTemplateId", i);
		const char *lt_name = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.LaunchTemplateSpecification.LaunchTemplateName", i);
		const struct aws_launch_template *lt = ec2_launch_template_find(aws, req->region, lt_id, lt_name);
		char prefix[64];
		size_t n_ovr;

		snprintf(prefix, sizeof(prefix), "LaunchTemplateConfigs.%zu.Overrides", i);
		n_ovr = aws_params_count(req->params, prefix);
		if (n_ovr == 0)
			return -ENODATA;
		for (size_t j = 1; j <= n_ovr; j++) {
			struct candidate *c;

			if (f->n % 16 == 0) {
				struct candidate *nc = realloc(f->c, (f->n + 16) * sizeof(*nc));

				if (!nc)
					return -ENOMEM;
				f->c = nc;
			}
			c = &f->c[f->n++];
			*c = (struct candidate){ .cfg = i, .ovr = j, .lt = lt };
			if (!lt_id && !lt_name)
				candidate_error(c, "MissingParameter",
						"The request must contain the parameter %s", "LaunchTemplateName or LaunchTemplateId");
			else if (!lt && lt_id)
				candidate_error(c, "InvalidLaunchTemplateId.NotFound",
						"The specified launch template, with template ID %s, does not exist.", lt_id);
			else if (!lt)
				candidate_error(c, "InvalidLaunchTemplateName.NotFoundException",
						"The specified launch template, with template name %s, does not exist.", lt_name);
			else
				candidate_resolve(aws, req, c);
		}
	}
	return 0;
}

/* The next override to try for a capacity type, or NULL when none is left. */
static struct candidate *candidate_next(struct fleet *f, int spot)
{
	struct candidate *best = NULL;

	for (size_t i = 0; i < f->n; i++) {
		struct candidate *c = &f->c[i];

		if (c->error_code || c->ice[spot])
			continue;
		if (!best)
			best = c;
		else if (f->prioritized[spot] && c->priority != best->priority) {
			if (c->priority < best->priority)
				best = c;
		} else if (c->price[spot] < best->price[spot])
			best = c;
	}
	return best;
}

static int strategy_parse(const struct aws_request *req, struct aws_response *resp,
			  struct fleet *f, bool *handled)
{
	static const char *const spot_ok[] = { "lowest-price", "price-capacity-optimized",
					       "capacity-optimized", "diversified",
					       "capacity-optimized-prioritized" };
	const char *s = aws_params_get(req->params, "SpotOptions.AllocationStrategy");
	const char *o = aws_params_get(req->params, "OnDemandOptions.AllocationStrategy");
	bool ok = !s;

	*handled = false;
	for (size_t i = 0; s && i < ARRAY_SIZE(spot_ok); i++)
		ok |= streq(s, spot_ok[i]);
	if (!ok || (o && !streq(o, "lowest-price") && !streq(o, "prioritized"))) {
		*handled = true;
		return aws_error(resp, req, 400, "InvalidParameterValue",
				 "Value (%s) for parameter AllocationStrategy is invalid.", ok ? o : s);
	}
	f->prioritized[1] = s && streq(s, "capacity-optimized-prioritized");
	f->prioritized[0] = o && streq(o, "prioritized");
	return 0;
}

static int ids_append(struct candidate *c, int spot, const char *id)
{
	char (*v)[24] = realloc(c->ids[spot], (c->n_ids[spot] + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	c->ids[spot] = v;
	snprintf(v[c->n_ids[spot]++], 24, "%s", id);
	return 0;
}

static int instance_launch(struct sim_aws *aws, const struct aws_request *req,
			   struct candidate *c, int spot, const struct aws_tags *tags,
			   const char *fleet_id)
{
	const struct aws_launch_spec spec = {
		.type = c->type, .region = c->reg, .zone = c->zone, .spot = spot,
		.price = c->price[spot], .image_id = c->image_id, .launch_template = c->lt,
		.tags = tags, .system_tag_key = "aws:ec2:fleet-id", .system_tag_value = fleet_id,
	};
	struct aws_instance *i;
	int r;

	r = aws_instance_launch(aws, &spec, &i);
	if (r < 0)
		return r;
	return ids_append(c, spot, i->id);
}

/* Launches units of one capacity type; returns how many it launched. */
static int fleet_fill(struct sim_aws *aws, const struct aws_request *req, struct fleet *f,
		      int spot, unsigned units, const struct aws_tags *tags, const char *fleet_id)
{
	unsigned done = 0;
	int r;

	while (done < units) {
		struct candidate *c = candidate_next(f, spot);

		if (!c)
			break;
		c->ice[spot] = aws_faults_ice(aws, c->type->name, c->zone->name, spot);
		if (c->ice[spot]) {
			aws->injected.insufficient_capacity++;
			aws_timeline_add(aws, "insufficient-capacity", "%s %s %s", c->type->name,
					 c->zone->name, spot ? "spot" : "on-demand");
			continue;
		}
		r = instance_launch(aws, req, c, spot, tags, fleet_id);
		if (r < 0)
			return r;
		done++;
	}
	return (int)done;
}

static void write_lt_and_override(struct xml *x, const struct aws_request *req,
				  const struct candidate *c)
{
	const char *lt_id = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.LaunchTemplateSpecification.LaunchTemplateId", c->cfg);
	const char *lt_name = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.LaunchTemplateSpecification.LaunchTemplateName", c->cfg);
	const char *lt_version = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.LaunchTemplateSpecification.Version", c->cfg);
	const char *type = aws_params_getf(req->params, "LaunchTemplateConfigs.%zu.Overrides.%zu.InstanceType", c->cfg, c->ovr);

	xml_open(x, "launchTemplateAndOverrides");
	/* The launch template as the request named it, like the overrides
	 * below: the reply's FleetLaunchTemplateSpecification has the
	 * request's three members, and the sim adds no id, name or version
	 * the request did not send (a client must not come to rely on one). */
	xml_open(x, "launchTemplateSpecification");
	if (lt_id)
		xml_leaf(x, "launchTemplateId", lt_id);
	if (lt_name)
		xml_leaf(x, "launchTemplateName", lt_name);
	if (lt_version)
		xml_leaf(x, "version", lt_version);
	xml_close(x, "launchTemplateSpecification");
	xml_open(x, "overrides");
	if (type)
		xml_leaf(x, "instanceType", type);
	if (c->subnet_param)
		xml_leaf(x, "subnetId", c->subnet_param);
	/* As sent, and nothing more (CreateFleet's FleetLaunchTemplateOverrides
	 * in the reply echo the request's): a zone EC2 chose from the
	 * subnet is not named here. */
	if (c->az_param)
		xml_leaf(x, "availabilityZone", c->az_param);
	if (c->image_overridden)
		xml_leaf(x, "imageId", c->image_id);
	if (c->priority != HUGE_VAL && !c->error_code)
		xml_leaff(x, "priority", "%g", c->priority);
	xml_close(x, "overrides");
	xml_close(x, "launchTemplateAndOverrides");
}

static void write_result(struct xml *x, const struct aws_request *req, const struct fleet *f,
			 const char *fleet_id, int default_spot)
{
	xml_leaf(x, "fleetId", fleet_id);
	xml_open(x, "errorSet");
	for (size_t i = 0; i < f->n; i++)
		for (int spot = 0; spot < 2; spot++) {
			const struct candidate *c = &f->c[i];
			bool failed = c->ice[spot] || (c->error_code && spot == default_spot);

			if (!failed)
				continue;
			xml_open(x, "item");
			write_lt_and_override(x, req, c);
			xml_leaf(x, "lifecycle", spot ? "spot" : "on-demand");
			xml_leaf(x, "errorCode", c->error_code ?: c->ice[spot]);
			if (c->error_code)
				xml_leaf(x, "errorMessage", c->error_msg);
			else if (streq(c->ice[spot], "InsufficientInstanceCapacity"))
				xml_leaff(x, "errorMessage",
					  "We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity.",
					  c->type->name, c->zone->name);
			else
				xml_leaff(x, "errorMessage", "%s: no capacity for %s in %s (injected by kanna-sim).",
					  c->ice[spot], c->type->name, c->zone->name);
			xml_close(x, "item");
		}
	xml_close(x, "errorSet");
	xml_open(x, "fleetInstanceSet");
	for (size_t i = 0; i < f->n; i++)
		for (int spot = 0; spot < 2; spot++) {
			const struct candidate *c = &f->c[i];

			if (c->n_ids[spot] == 0)
				continue;
			xml_open(x, "item");
			write_lt_and_override(x, req, c);
			xml_leaf(x, "lifecycle", spot ? "spot" : "on-demand");
			xml_open(x, "instanceIds");
			for (size_t k = 0; k < c->n_ids[spot]; k++)
				xml_leaf(x, "item", c->ids[spot][k]);
			xml_close(x, "instanceIds");
			xml_leaf(x, "instanceType", c->type->name);
			xml_close(x, "item");
		}
	xml_close(x, "fleetInstanceSet");
}

static uint64_t params_hash(const struct aws_params *p)
{
	uint64_t h = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (streq(p->v[i].name, "ClientToken"))
			continue;
		h = aws_hash(p->v[i].name, h);
		h = aws_hash("=", h);
		h = aws_hash(p->v[i].value, h);
	}
	return h;
}

static struct aws_fleet_record *fleet_record_find(struct sim_aws *aws, const char *region,
						  const char *token)
{
	for (size_t i = 0; token && i < aws->n_fleets; i++)
		if (streq(aws->fleets[i].client_token, token) && streq(aws->fleets[i].region, region))
			return &aws->fleets[i];
	return NULL;
}

static int fleet_record_add(struct sim_aws *aws, const struct aws_request *req, const char *token,
			    const char *fleet_id, const char *frag)
{
	struct aws_fleet_record *rec;

	if (aws->n_fleets == aws->cap_fleets) {
		size_t cap = aws->cap_fleets ? aws->cap_fleets * 2 : 16;

		rec = realloc(aws->fleets, cap * sizeof(*rec));
		if (!rec)
			return -ENOMEM;
		aws->fleets = rec;
		aws->cap_fleets = cap;
	}
	rec = &aws->fleets[aws->n_fleets];
	*rec = (struct aws_fleet_record){ .params_hash = params_hash(req->params) };
	rec->client_token = strdup(token);
	rec->result_xml = strdup(frag);
	if (!rec->client_token || !rec->result_xml) {
		free(rec->client_token);
		free(rec->result_xml);
		return -ENOMEM;
	}
	snprintf(rec->region, sizeof(rec->region), "%s", req->region);
	snprintf(rec->fleet_id, sizeof(rec->fleet_id), "%s", fleet_id);
	aws->n_fleets++;
	return 0;
}

static int fleet_reply(const struct aws_request *req, struct aws_response *resp, const char *frag)
{
	struct xml x;
	int r = xml_begin(&x, "CreateFleetResponse", EC2_XMLNS);

	if (r < 0)
		return r;
	xml_leaf(&x, "requestId", req->request_id);
	xml_raw(&x, frag);
	return xml_finish(&x, "CreateFleetResponse", resp);
}

struct capacity {
	unsigned long total, units[2]; /* [0] on-demand, [1] spot */
	int default_spot;
};

/* TargetCapacitySpecification and Type; true in *handled with an error. */
static int capacity_parse(const struct aws_request *req, struct aws_response *resp,
			  struct capacity *cap, bool *handled)
{
	const char *type = aws_params_get(req->params, "Type");
	const char *total = aws_params_get(req->params, "TargetCapacitySpecification.TotalTargetCapacity");
	const char *dflt = aws_params_get(req->params, "TargetCapacitySpecification.DefaultTargetCapacityType");
	const char *od = aws_params_get(req->params, "TargetCapacitySpecification.OnDemandTargetCapacity");
	const char *spot = aws_params_get(req->params, "TargetCapacitySpecification.SpotTargetCapacity");
	unsigned long other = 0;

	*handled = true;
	if (!total)
		return aws_error_missing(resp, req, "TargetCapacitySpecification.TotalTargetCapacity");
	if (!dflt)
		return aws_error_missing(resp, req, "TargetCapacitySpecification.DefaultTargetCapacityType");
	if (aws_parse_uint(total, FLEET_CAPACITY_MAX, &cap->total) < 0 || cap->total == 0)
		return aws_error(resp, req, 400, "InvalidParameterValue",
				 "Value (%s) for parameter TargetCapacitySpecification.TotalTargetCapacity is invalid.", total);
	if (!streq(dflt, "spot") && !streq(dflt, "on-demand"))
		return aws_error(resp, req, 400, "InvalidParameterValue",
				 "Value (%s) for parameter TargetCapacitySpecification.DefaultTargetCapacityType is invalid.", dflt);
	if (!type || !streq(type, "instant"))
		return aws_error(resp, req, 400, "Unsupported",
				 "kanna-sim supports only Type=instant fleets (got %s).", type ? type : "maintain");
	cap->default_spot = streq(dflt, "spot");
	/* The non-default type gets its explicit share, the default the rest. */
	if (cap->default_spot ? od != NULL : spot != NULL) {
		const char *s = cap->default_spot ? od : spot;

		if (aws_parse_uint(s, cap->total, &other) < 0)
			return aws_error(resp, req, 400, "InvalidParameterValue",
					 "Value (%s) for the target capacity of the non-default type is invalid.", s);
	}
	cap->units[!cap->default_spot] = other;
	cap->units[cap->default_spot] = cap->total - other;
	*handled = false;
	return 0;
}

static int fleet_run(struct sim_aws *aws, const struct aws_request *req, struct fleet *f,
		     const struct capacity *cap, const struct aws_tags *tags, char **ret_frag)
{
	char fleet_id[48], uuid[40];
	unsigned launched = 0;
	struct xml x;
	int r;

	aws_new_uuid(aws, uuid);
	snprintf(fleet_id, sizeof(fleet_id), "fleet-%s", uuid);
	for (int spot = 0; spot < 2; spot++) {
		r = fleet_fill(aws, req, f, spot, (unsigned)cap->units[spot], tags, fleet_id);
		if (r < 0)
			return r;
		launched += (unsigned)r;
	}
	aws_timeline_add(aws, "create-fleet", "%s launched %u of %lu", fleet_id, launched, cap->total);
	r = xml_fragment_begin(&x);
	if (r < 0)
		return r;
	write_result(&x, req, f, fleet_id, cap->default_spot);
	r = xml_fragment_end(&x, ret_frag);
	if (r < 0)
		return r;
	snprintf(f->fleet_id, sizeof(f->fleet_id), "%s", fleet_id);
	return 0;
}

int ec2_create_fleet(struct sim_aws *aws, const struct aws_request *req,
		     struct aws_response *resp)
{
	const char *token = aws_params_get(req->params, "ClientToken");
	struct aws_fleet_record *rec = fleet_record_find(aws, req->region, token);
	size_t n_cfg = aws_params_count(req->params, "LaunchTemplateConfigs");
	_cleanup_free_ char *frag = NULL;
	struct aws_tags tags = { 0 };
	struct capacity cap = { 0 };
	struct fleet f = { 0 };
	char bad[96];
	bool handled;
	int r;

	if (rec && rec->params_hash != params_hash(req->params))
		return aws_error(resp, req, 400, "IdempotentParameterMismatch",
				 "Client token %s was already used with different parameters.", token);
	if (rec) {
		aws_timeline_add(aws, "create-fleet-replay", "%s token %s", rec->fleet_id, token);
		return fleet_reply(req, resp, rec->result_xml);
	}
	r = capacity_parse(req, resp, &cap, &handled);
	if (r < 0 || handled)
		return r;
	if (n_cfg == 0)
		return aws_error_missing(resp, req, "LaunchTemplateConfigs");
	r = strategy_parse(req, resp, &f, &handled);
	if (r < 0 || handled)
		return r;
	r = ec2_parse_tag_specs(req->params, "instance", &tags, bad, sizeof(bad));
	if (r == -EINVAL)
		r = aws_error(resp, req, 400, "InvalidParameterValue",
			      "Value for parameter %s is invalid", bad);
	else if (r >= 0) {
		r = candidates_collect(aws, req, &f, n_cfg);
		if (r == -ENODATA)
			r = aws_error_missing(resp, req, "LaunchTemplateConfigs.N.Overrides");
		else if (r >= 0)
			r = fleet_run(aws, req, &f, &cap, &tags, &frag);
		if (r >= 0 && frag && token)
			r = fleet_record_add(aws, req, token, f.fleet_id, frag);
		if (r >= 0 && frag)
			r = fleet_reply(req, resp, frag);
	}
	aws_tags_clear(&tags);
	fleet_clear(&f);
	return r;
}
