/*
 * AWS Price List GetProducts for kanna-sim (awsJson1_1, target
 * AWSPriceListService.GetProducts, ServiceCode AmazonEC2): one Linux,
 * shared-tenancy, on-demand product per offered instance type and region,
 * priced by aws-catalog.c's rule, as the JSON strings in PriceList that
 * the real API returns. TERM_MATCH filters on product attributes; paging by
 * MaxResults/NextToken. Called by aws_dispatch() with the lock held.
 */
#include "sim/aws-internal.h"

/* GetProducts returns at most 100 products per page. */
#define PRICING_PAGE_MAX 100
/* AWS's offer term and rate codes for on-demand hourly usage. */
#define OD_TERM_CODE "JRTCKXETXF"
#define OD_RATE_CODE "6YS6EN2CT7"

static const char *region_location(const char *region)
{
	if (streq(region, "eu-west-1"))
		return "EU (Ireland)";
	if (streq(region, "ap-northeast-1"))
		return "Asia Pacific (Tokyo)";
	return "US West (Oregon)";
}

static json_t *product_attributes(const struct aws_instance_type *t, const struct aws_region *r)
{
	char vcpu[16], mem[32];

	snprintf(vcpu, sizeof(vcpu), "%u", t->vcpu);
	snprintf(mem, sizeof(mem), "%g GiB", (double)t->memory_mib / 1024);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
			 "servicecode", "AmazonEC2", "instanceType", t->name, "instanceFamily",
			 t->family, "regionCode", r->name, "location", region_location(r->name),
			 "operatingSystem", "Linux", "tenancy", "Shared", "preInstalledSw", "NA",
			 "capacitystatus", "Used", "marketoption", "OnDemand", "licenseModel",
			 "No License required", "vcpu", vcpu, "memory", mem);
}

static bool attributes_match(json_t *attrs, const char *family, json_t *filters)
{
	size_t i;
	json_t *f;

	json_array_foreach(filters, i, f) {
		const char *field = json_string_value(json_object_get(f, "Field"));
		const char *value = json_string_value(json_object_get(f, "Value"));
		const char *have = NULL;

		if (!field || !value)
			return false;
		if (streq(field, "productFamily"))
			have = family;
		else if (streq(field, "serviceCode"))
			have = "AmazonEC2";
		else
			have = json_string_value(json_object_get(attrs, field));
		if (!have || strcasecmp(have, value) != 0)
			return false;
	}
	return true;
}

/*
 * GetProducts' input constraints (Price List API Reference,
 * API_pricing_GetProducts.html and API_pricing_Filter.html: ServiceCode
 * required; MaxResults 1 to 100; each Filter's Field, Type and Value
 * required, Type one of TERM_MATCH, EQUALS, CONTAINS, ANY_OF, NONE_OF),
 * refused as the service's front end refuses a constraint violation: 400
 * ValidationException (CommonErrors.html) in Coral's words, "1 validation
 * error detected: Value ... at '<member path>' failed to satisfy
 * constraint: ...". The first violation found is reported.
 */
static int pricing_invalid(struct aws_response *resp, const struct aws_request *req,
			   const char *fmt, ...) _printf_(3, 4);
static int pricing_invalid(struct aws_response *resp, const struct aws_request *req,
			   const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* 1: answered (aws_error() returns 0 once the answer is built). */
	return aws_error(resp, req, 400, "ValidationException",
			 "1 validation error detected: %s", msg) < 0 ? -ENOMEM : 1;
}

/* 0 when the input holds, 1 when it was answered with the refusal. */
static int check_input(struct aws_response *resp, const struct aws_request *req)
{
	static const char *const types[] = { "TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF" };
	const json_t *svc = json_object_get(req->json, "ServiceCode");
	const json_t *jmax = json_object_get(req->json, "MaxResults");
	json_t *filters = json_object_get(req->json, "Filters"), *f;
	size_t i;

	if (!json_is_string(svc))
		return pricing_invalid(resp, req, "Value null at 'serviceCode' failed to satisfy "
					"constraint: Member must not be null");
	if (jmax && json_is_integer(jmax) && json_integer_value(jmax) < 1)
		return pricing_invalid(resp, req, "Value '%" JSON_INTEGER_FORMAT "' at 'maxResults' "
					"failed to satisfy constraint: Member must have value greater "
					"than or equal to 1", json_integer_value(jmax));
	if (jmax && json_is_integer(jmax) && json_integer_value(jmax) > PRICING_PAGE_MAX)
		return pricing_invalid(resp, req, "Value '%" JSON_INTEGER_FORMAT "' at 'maxResults' "
					"failed to satisfy constraint: Member must have value less "
					"than or equal to %d", json_integer_value(jmax), PRICING_PAGE_MAX);
	json_array_foreach(filters, i, f) {
		static const char *const required[][2] = { { "Field", "field" }, { "Type", "type" },
							   { "Value", "value" } };
		const char *type = json_string_value(json_object_get(f, "Type"));
		bool known = false;

		for (size_t k = 0; k < ARRAY_SIZE(required); k++)
			if (!json_is_string(json_object_get(f, required[k][0])))
				return pricing_invalid(resp, req, "Value null at 'filters.%zu.member.%s' "
							"failed to satisfy constraint: Member must not "
							"be null", i + 1, required[k][1]);
		for (size_t k = 0; k < ARRAY_SIZE(types); k++)
			known = known || streq(type, types[k]);
		if (!known)
			return pricing_invalid(resp, req, "Value '%s' at 'filters.%zu.member.type' failed "
						"to satisfy constraint: Member must satisfy enum value set: "
						"[TERM_MATCH, EQUALS, CONTAINS, ANY_OF, NONE_OF]", type, i + 1);
	}
	return 0;
}

static char *product_json(json_t *attrs, const struct aws_instance_type *t,
			  const struct aws_region *r, double price)
{
	char sku[24], term[48], rate[64], usd[32];
	json_t *doc;
	char *s;

	snprintf(sku, sizeof(sku), "SIM%016llX",
		 (unsigned long long)(aws_hash(t->name, 0) ^ aws_hash(r->name, 1)));
	snprintf(term, sizeof(term), "%s.%s", sku, OD_TERM_CODE);
	snprintf(rate, sizeof(rate), "%s.%s", term, OD_RATE_CODE);
	snprintf(usd, sizeof(usd), "%.10f", price);
	doc = json_pack("{s:{s:s, s:O, s:s}, s:s, s:{s:{s:{s:{s:{s:s, s:s, s:s, s:s, s:[], s:s, s:{s:s}}}, s:s, s:s, s:s, s:{}}}}, s:s, s:s}",
			"product", "productFamily", "Compute Instance", "attributes", attrs, "sku", sku,
			"serviceCode", "AmazonEC2",
			"terms", "OnDemand", term, "priceDimensions", rate,
			"unit", "Hrs", "endRange", "Inf", "description", "On Demand Linux (kanna-sim)",
			"rateCode", rate, "appliesTo", "beginRange", "0", "pricePerUnit", "USD", usd,
			"sku", sku, "effectiveDate", "2025-06-01T00:00:00Z", "offerTermCode", OD_TERM_CODE,
			"termAttributes",
			"version", "20250601000000", "publicationDate", "2025-06-01T00:00:00Z");
	if (!doc)
		return NULL;
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}

int pricing_get_products(struct sim_aws *aws, const struct aws_request *req,
			 struct aws_response *resp)
{
	const char *svc = json_string_value(json_object_get(req->json, "ServiceCode"));
	const char *token = json_string_value(json_object_get(req->json, "NextToken"));
	json_t *filters = json_object_get(req->json, "Filters"), *f, *list;
	json_t *jmax = json_object_get(req->json, "MaxResults");
	unsigned long start = 0, limit = PRICING_PAGE_MAX;
	size_t i, n = 0;
	int bad;

	/* A member of the wrong JSON type is the awsJson protocol's own
	 * refusal, SerializationException (its message text is the sim's
	 * guess at Coral's: no reference quotes it). */
	if ((filters && !json_is_array(filters)) || (jmax && !json_is_integer(jmax)) ||
	    (json_object_get(req->json, "ServiceCode") && !svc))
		return aws_error(resp, req, 400, "SerializationException",
				 "Start of structure or map found where not expected.");
	bad = check_input(resp, req);
	if (bad != 0)
		return bad < 0 ? bad : 0;
	/* The other types are AWS's but not simulated: refused, never ignored. */
	json_array_foreach(filters, i, f)
		if (!streq_ptr(json_string_value(json_object_get(f, "Type")), "TERM_MATCH"))
			return aws_error(resp, req, 400, "InvalidParameterException",
					 "kanna-sim simulates only filters of Type TERM_MATCH");
	if (jmax)
		limit = (unsigned long)json_integer_value(jmax);
	if (token && (strncmp(token, "sim-", 4) != 0 || aws_parse_uint(token + 4, SIZE_MAX, &start) < 0))
		return aws_error(resp, req, 400, "InvalidNextTokenException", "The NextToken is invalid");
	list = json_array();
	if (!list)
		return -ENOMEM;
	for (size_t r = 0; streq(svc, "AmazonEC2") && r < aws->catalog->n_regions; r++)
		for (size_t k = 0; k < aws->catalog->n_types; k++) {
			const struct aws_region *reg = &aws->catalog->regions[r];
			const struct aws_instance_type *t = &aws->catalog->types[k];
			json_t *attrs;
			char *doc;

			if (!aws_type_offered(t))
				continue;
			attrs = product_attributes(t, reg);
			if (!attrs || !attributes_match(attrs, "Compute Instance", filters)) {
				json_decref(attrs);
				continue;
			}
			if (n >= start && n - start < limit) {
				doc = product_json(attrs, t, reg,
						   aws_catalog_price(reg, &reg->zones[0], t, false));
				if (!doc || json_array_append_new(list, json_string(doc)) < 0) {
					free(doc);
					json_decref(attrs);
					json_decref(list);
					return -ENOMEM;
				}
				free(doc);
			}
			json_decref(attrs);
			n++;
		}
	if (start + limit < n) {
		char next[32];

		snprintf(next, sizeof(next), "sim-%lu", start + limit);
		return aws_json_reply(resp, json_pack("{s:s, s:o, s:s}", "FormatVersion", "aws_v1",
						      "PriceList", list, "NextToken", next));
	}
	return aws_json_reply(resp, json_pack("{s:s, s:o}", "FormatVersion", "aws_v1", "PriceList", list));
}
