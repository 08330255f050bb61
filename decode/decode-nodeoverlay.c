/*
 * karpenter.sh/v1alpha1 NodeOverlays (kubernetes-sigs/karpenter
 * pkg/apis/v1alpha1/nodeoverlay.go). What the CRD's schema and CEL rules
 * check, the API server has checked; what they do not (and what kanna does
 * not apply) is an invalid overlay: decoded with `invalid` set, so that the
 * watcher writes ValidationSucceeded=False naming the field and the
 * schedulers leave it out, as Karpenter's nodeoverlay validation
 * controller leaves out an overlay that fails.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/decode.h"

/* Requirement keys an overlay may select instance types and offerings by
 * in kanna: the labels of an instance type and of its offerings. A
 * NodePool's name or template labels would make an overlay's price differ
 * per NodePool, which kanna's one catalog per scheduler cannot hold. */
static bool overlay_key_supported(const char *key)
{
	static const char *const keys[] = {
		"node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
		"topology.kubernetes.io/zone", "topology.kubernetes.io/region",
		"karpenter.sh/capacity-type",
	};

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (streq(key, keys[i]))
			return true;
	return !strncmp(key, "karpenter.k8s.aws/instance-", 27);
}

/* "12", "0.5": the CRD's pattern ^\d+(\.\d+)?$. */
static bool parse_price(const char *s, double *ret)
{
	char *end;

	if (!s || !*s || *s < '0' || *s > '9')
		return false;
	*ret = strtod(s, &end);
	return *end == '\0' && end[-1] != '.';
}

/* "+0.5", "-1", "+10%", "-15%" (a decrease of at most 100%). */
static bool parse_adjustment(const char *s, double *ret, bool *percent)
{
	size_t len = s ? strlen(s) : 0;
	char num[64], *end;

	if (len < 2 || len >= sizeof(num) || (s[0] != '+' && s[0] != '-'))
		return false;
	*percent = s[len - 1] == '%';
	memcpy(num, s, len + 1);
	if (*percent)
		num[--len] = '\0';
	if (len < 2 || !strchr("0123456789.", num[1]))
		return false;
	*ret = strtod(num, &end);
	if (*end != '\0')
		return false;
	return !*percent || *ret >= -100;
}

static char *invalid(struct decoder *d, const char *fmt, ...) _printf_(2, 3);
static char *invalid(struct decoder *d, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return arena_strdup(d->arena, buf);
}

static int overlay_spec(struct decoder *d, const json_t *spec, struct proto_nodeoverlay *o)
{
	const json_t *w = json_object_get(spec, "weight"), *cap = json_object_get(spec, "capacity");
	char *price = NULL, *adjust = NULL;
	int r;

	if ((r = decode_karpenter_requirements(d, json_object_get(spec, "requirements"),
					       "spec.requirements", &o->requirements,
					       &o->n_requirements)) < 0 ||
	    (r = decode_string(d, spec, "price", "spec.price", &price)) < 0 ||
	    (r = decode_string(d, spec, "priceAdjustment", "spec.priceAdjustment", &adjust)) < 0 ||
	    (r = decode_resources(d, cap, "spec.capacity", &o->capacity, &o->n_capacity)) < 0)
		return r;
	if (w && !json_is_null(w)) {
		if (!json_is_integer(w) || json_integer_value(w) < 1 || json_integer_value(w) > 10000)
			return decode_fail(d, "spec.weight: expected an integer from 1 to 10000");
		o->weight = (int32_t)json_integer_value(w);
	}
	for (uint32_t i = 0; i < o->n_requirements; i++)
		if (!overlay_key_supported(o->requirements[i].key)) {
			o->invalid = invalid(d, "spec.requirements: key %s is not supported by kanna, which "
					     "applies NodeOverlays by instance type and offering labels only",
					     o->requirements[i].key);
			return o->invalid ? 0 : -ENOMEM;
		}
	for (uint32_t i = 0; i < o->n_capacity; i++) {
		static const char *const standard[] = { "cpu", "memory", "ephemeral-storage", "pods" };

		for (size_t k = 0; k < ARRAY_SIZE(standard); k++)
			if (streq(o->capacity[i].name, standard[k])) {
				o->invalid = invalid(d, "spec.capacity.%s: invalid resource restricted",
						     standard[k]);
				return o->invalid ? 0 : -ENOMEM;
			}
	}
	if (price && adjust)
		o->invalid = invalid(d, "spec: cannot set both 'price' and 'priceAdjustment'");
	else if (price && !(o->has_price = parse_price(price, &o->price)))
		o->invalid = invalid(d, "spec.price: '%s' is not a price", price);
	else if (adjust && !(o->has_adjustment = parse_adjustment(adjust, &o->adjustment,
								   &o->adjustment_percent)))
		o->invalid = invalid(d, "spec.priceAdjustment: '%s' is neither a signed amount nor a "
				     "percentage", adjust);
	else
		return 0;
	return o->invalid ? 0 : -ENOMEM;
}

int decode_nodeoverlay(struct decoder *d, const json_t *obj, struct proto_nodeoverlay *o)
{
	const json_t *spec = json_object_get(obj, "spec");
	struct decoded_meta m;
	int r;

	*o = (struct proto_nodeoverlay){ 0 };
	if ((r = decode_metadata(d, obj, "NodeOverlay", false, &m)) < 0)
		return r;
	o->name = m.name;
	o->uid = m.uid;
	o->resource_version = m.resource_version;
	if (!json_is_object(spec))
		r = decode_fail(d, "spec: expected an object");
	else
		r = overlay_spec(d, spec, o);
	return r < 0 ? decode_prefix(d, "nodeoverlay", NULL, m.name, r) : 0;
}
