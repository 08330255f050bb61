/* SPDX-License-Identifier: MIT */
/* Parses a CreateFleet (type instant) response body into the launched
 * instance (id, type, zone, capacity type) and the per-offering errors
 * (InsufficientInstanceCapacity etc.) the launcher publishes as unavailable.
 * Pure; called by the fleet code on a 200 response; must never trust the body
 * (outside bytes): missing fields are -EBADMSG, never a guessed value. The
 * overrides EC2 echoes are the request's as sent (FleetLaunchTemplateOverrides):
 * the zone is there only when the request named it, else the subnet tells it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws.h"
#include "launcher/fleet-response.h"

static int copy_text(char *dst, size_t size, const char *src) {
        size_t n;

        if (!src || !*src)
                return -EBADMSG;
        n = strlen(src);
        if (n >= size)
                return -EBADMSG;
        memcpy(dst, src, n + 1);
        return 0;
}

static int parse_errors(const struct aws_xml_node *set, fleet_result *ret) {
        size_t n = 0;

        for (const struct aws_xml_node *i = aws_xml_first(set, "item"); i; i = aws_xml_next(i))
                n++;
        if (n == 0)
                return 0;
        ret->errors = calloc(n, sizeof(*ret->errors));
        if (!ret->errors)
                return -ENOMEM;
        for (const struct aws_xml_node *i = aws_xml_first(set, "item"); i; i = aws_xml_next(i)) {
                fleet_error *e = &ret->errors[ret->n_errors];

                if (copy_text(e->code, sizeof(e->code), aws_xml_text(i, "errorCode")) < 0)
                        continue;
                (void) copy_text(e->instance_type, sizeof(e->instance_type),
                                 aws_xml_text(i, "launchTemplateAndOverrides/overrides/instanceType"));
                (void) copy_text(e->zone, sizeof(e->zone),
                                 aws_xml_text(i, "launchTemplateAndOverrides/overrides/availabilityZone"));
                (void) copy_text(e->subnet_id, sizeof(e->subnet_id),
                                 aws_xml_text(i, "launchTemplateAndOverrides/overrides/subnetId"));
                ret->n_errors++;
        }
        return 0;
}

void fleet_result_done(fleet_result *r) {
        if (!r)
                return;
        free(r->errors);
        r->errors = NULL;
        r->n_errors = 0;
}

static int parse_launched(const struct aws_xml_node *item, const char *instance_id, fleet_launched *l) {
        int r;

        r = copy_text(l->instance_id, sizeof(l->instance_id), instance_id);
        if (r >= 0)
                r = copy_text(l->instance_type, sizeof(l->instance_type), aws_xml_text(item, "instanceType"));
        if (r >= 0) {
                /* One of the two places it: zone as sent, or the subnet. */
                int z = copy_text(l->zone, sizeof(l->zone),
                                  aws_xml_text(item, "launchTemplateAndOverrides/overrides/availabilityZone"));
                int s = copy_text(l->subnet_id, sizeof(l->subnet_id),
                                  aws_xml_text(item, "launchTemplateAndOverrides/overrides/subnetId"));

                if (z < 0 && s < 0)
                        r = -EBADMSG;
        }
        if (r >= 0)
                r = copy_text(l->capacity_type, sizeof(l->capacity_type), aws_xml_text(item, "lifecycle"));
        return r;
}

static void zone_from_subnet(char *zone, size_t size, const char *subnet_id,
                             const char *(*zone_of)(const char *, void *), void *userdata) {
        const char *z;

        if (*zone || !*subnet_id || !(z = zone_of(subnet_id, userdata)))
                return;
        (void) copy_text(zone, size, z);
}

int fleet_result_zones(fleet_result *r, const char *(*zone_of)(const char *subnet_id, void *userdata),
                       void *userdata) {
        for (size_t i = 0; i < r->n_errors; i++)
                zone_from_subnet(r->errors[i].zone, sizeof(r->errors[i].zone), r->errors[i].subnet_id,
                                 zone_of, userdata);
        for (size_t i = 0; i < r->n_launched; i++) {
                zone_from_subnet(r->all[i].zone, sizeof(r->all[i].zone), r->all[i].subnet_id, zone_of,
                                 userdata);
                if (!*r->all[i].zone)
                        return -EBADMSG;
        }
        if (r->launched_ok)
                r->launched = r->all[0];
        return 0;
}

int fleet_response_parse(const char *body, size_t len, fleet_result *ret) {
        struct aws_xml_node *root = NULL;
        const struct aws_xml_node *set, *item;
        int r;

        if (!body || !ret)
                return -EINVAL;
        memset(ret, 0, sizeof(*ret));
        r = aws_xml_parse(body, len, &root);
        if (r < 0)
                return r;
        set = aws_xml_child(root, "errorSet");
        if (set && (r = parse_errors(set, ret)) < 0)
                goto finish;
        set = aws_xml_child(root, "fleetInstanceSet");
        for (item = set ? aws_xml_first(set, "item") : NULL; item; item = aws_xml_next(item)) {
                const struct aws_xml_node *ids = aws_xml_child(item, "instanceIds"), *id;

                for (id = ids ? aws_xml_first(ids, "item") : NULL; id; id = aws_xml_next(id)) {
                        if (ret->n_launched == FLEET_MAX_INSTANCES)
                                break;
                        r = parse_launched(item, id->text, &ret->all[ret->n_launched]);
                        if (r < 0)
                                goto finish;
                        ret->n_launched++;
                }
        }
        if (ret->n_launched > 0) {
                ret->launched = ret->all[0];
                ret->launched_ok = 1;
        }
        r = 0;
finish:
        if (r < 0)
                fleet_result_done(ret);
        aws_xml_free(root);
        return r;
}
