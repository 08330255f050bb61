/* SPDX-License-Identifier: MIT */
/* Unit tests for launcher/fleet-response.c: CreateFleet response shape. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/fleet-response.h"

#define OK_BODY \
        "<CreateFleetResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">" \
        "<fleetId>fleet-1</fleetId><errorSet><item>" \
        "<launchTemplateAndOverrides><overrides><instanceType>m5.large</instanceType>" \
        "<availabilityZone>us-west-2a</availabilityZone></overrides></launchTemplateAndOverrides>" \
        "<lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode>" \
        "</item></errorSet><fleetInstanceSet><item>" \
        "<launchTemplateAndOverrides><overrides><instanceType>m5.xlarge</instanceType>" \
        "<availabilityZone>us-west-2b</availabilityZone></overrides></launchTemplateAndOverrides>" \
        "<lifecycle>spot</lifecycle><instanceIds><item>i-0abc</item></instanceIds>" \
        "<instanceType>m5.xlarge</instanceType></item></fleetInstanceSet></CreateFleetResponse>"

Test(launcher_fleet_response, parses_launched_instance_and_ice_error) {
        fleet_result r;

        cr_assert_eq(fleet_response_parse(OK_BODY, strlen(OK_BODY), &r), 0);
        cr_assert_eq(r.launched_ok, 1);
        cr_assert_str_eq(r.launched.instance_id, "i-0abc");
        cr_assert_str_eq(r.launched.instance_type, "m5.xlarge");
        cr_assert_str_eq(r.launched.zone, "us-west-2b");
        cr_assert_str_eq(r.launched.capacity_type, "spot");
        cr_assert_eq(r.n_errors, 1);
        cr_assert_str_eq(r.errors[0].code, "InsufficientInstanceCapacity");
        cr_assert_str_eq(r.errors[0].instance_type, "m5.large");
        cr_assert_str_eq(r.errors[0].zone, "us-west-2a");
        fleet_result_done(&r);
}

Test(launcher_fleet_response, no_instance_is_not_launched) {
        const char *b = "<CreateFleetResponse><fleetId>f</fleetId><fleetInstanceSet/></CreateFleetResponse>";
        fleet_result r;

        cr_assert_eq(fleet_response_parse(b, strlen(b), &r), 0);
        cr_assert_eq(r.launched_ok, 0);
        fleet_result_done(&r);
}

Test(launcher_fleet_response, instance_without_zone_or_subnet_is_rejected) {
        const char *b = "<CreateFleetResponse><fleetInstanceSet><item><instanceIds><item>i-1</item>"
                        "</instanceIds><instanceType>m5.large</instanceType><lifecycle>spot</lifecycle>"
                        "</item></fleetInstanceSet></CreateFleetResponse>";
        fleet_result r;

        cr_assert_eq(fleet_response_parse(b, strlen(b), &r), -EBADMSG);
}

/* EC2's CreateFleetResponse (CreateFleetInstance, CreateFleetError: their
 * launchTemplateAndOverrides echo FleetLaunchTemplateOverrides as the
 * request sent them): a request that named subnets only gets subnets back. */
#define SUBNET_ONLY_BODY \
        "<CreateFleetResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">" \
        "<requestId>e5a2b2d1-0000-4000-8000-000000000000</requestId><fleetId>fleet-1</fleetId>" \
        "<errorSet><item><launchTemplateAndOverrides><launchTemplateSpecification>" \
        "<launchTemplateName>kanna-1</launchTemplateName><version>$Latest</version>" \
        "</launchTemplateSpecification><overrides><instanceType>m5.large</instanceType>" \
        "<subnetId>subnet-a</subnetId></overrides></launchTemplateAndOverrides>" \
        "<lifecycle>spot</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode>" \
        "<errorMessage>We currently do not have sufficient capacity.</errorMessage></item></errorSet>" \
        "<fleetInstanceSet><item><launchTemplateAndOverrides><launchTemplateSpecification>" \
        "<launchTemplateName>kanna-1</launchTemplateName><version>$Latest</version>" \
        "</launchTemplateSpecification><overrides><instanceType>m5.xlarge</instanceType>" \
        "<subnetId>subnet-b</subnetId></overrides></launchTemplateAndOverrides>" \
        "<lifecycle>spot</lifecycle><instanceIds><item>i-0abc</item></instanceIds>" \
        "<instanceType>m5.xlarge</instanceType><platform>Linux/UNIX</platform></item>" \
        "</fleetInstanceSet></CreateFleetResponse>"

static const char *zone_of(const char *subnet, void *userdata) {
        (void) userdata;
        return strcmp(subnet, "subnet-a") == 0 ? "us-west-2a" :
               strcmp(subnet, "subnet-b") == 0 ? "us-west-2b" : NULL;
}

static const char *no_zone(const char *subnet, void *userdata) {
        (void) subnet;
        (void) userdata;
        return NULL;
}

Test(launcher_fleet_response, a_reply_that_names_subnets_only_is_placed_by_them) {
        fleet_result r;

        cr_assert_eq(fleet_response_parse(SUBNET_ONLY_BODY, strlen(SUBNET_ONLY_BODY), &r), 0);
        cr_assert_str_eq(r.launched.subnet_id, "subnet-b");
        cr_assert_str_eq(r.launched.zone, "");
        cr_assert_eq(fleet_result_zones(&r, zone_of, NULL), 0);
        cr_assert_str_eq(r.launched.zone, "us-west-2b");
        cr_assert_str_eq(r.all[0].zone, "us-west-2b");
        /* The capacity error names its offering too, so it can be marked. */
        cr_assert_str_eq(r.errors[0].zone, "us-west-2a");
        fleet_result_done(&r);

        /* A subnet we never sent places nothing: unreadable, not guessed. */
        cr_assert_eq(fleet_response_parse(SUBNET_ONLY_BODY, strlen(SUBNET_ONLY_BODY), &r), 0);
        cr_assert_eq(fleet_result_zones(&r, no_zone, NULL), -EBADMSG);
        fleet_result_done(&r);

        /* A zone as sent wins over the subnet's. */
        cr_assert_eq(fleet_response_parse(OK_BODY, strlen(OK_BODY), &r), 0);
        cr_assert_eq(fleet_result_zones(&r, no_zone, NULL), 0);
        cr_assert_str_eq(r.launched.zone, "us-west-2b");
        fleet_result_done(&r);
}

Test(launcher_fleet_response, malformed_xml_is_rejected) {
        fleet_result r;

        cr_assert_lt(fleet_response_parse("<a><b></a>", 10, &r), 0);
}

Test(launcher_fleet_response, every_instance_of_a_batch_is_returned) {
        static const char doc[] =
                "<CreateFleetResponse><fleetInstanceSet><item><launchTemplateAndOverrides><overrides>"
                "<instanceType>m5.large</instanceType><availabilityZone>us-west-2b</availabilityZone>"
                "</overrides></launchTemplateAndOverrides><lifecycle>on-demand</lifecycle><instanceIds>"
                "<item>i-1</item><item>i-2</item></instanceIds><instanceType>m5.large</instanceType></item>"
                "<item><launchTemplateAndOverrides><overrides><instanceType>m5.xlarge</instanceType>"
                "<availabilityZone>us-west-2c</availabilityZone></overrides></launchTemplateAndOverrides>"
                "<lifecycle>spot</lifecycle><instanceIds><item>i-3</item></instanceIds>"
                "<instanceType>m5.xlarge</instanceType></item></fleetInstanceSet></CreateFleetResponse>";
        static fleet_result r;

        cr_assert_eq(fleet_response_parse(doc, sizeof(doc) - 1, &r), 0);
        cr_assert_eq(r.n_launched, 3);
        cr_assert_str_eq(r.launched.instance_id, "i-1");
        cr_assert_str_eq(r.all[1].instance_id, "i-2");
        cr_assert_str_eq(r.all[1].zone, "us-west-2b");
        cr_assert_str_eq(r.all[2].instance_type, "m5.xlarge");
        cr_assert_str_eq(r.all[2].capacity_type, "spot");
        fleet_result_done(&r);
}

/* 100 types × 3 zones of spot, all without capacity: an answer of 300
 * errors. Each names an offering to mark unavailable; one dropped is
 * tried again and again, so every one must be read. */
Test(launcher_fleet_response, every_error_of_a_long_answer_is_read) {
        static const char head[] = "<CreateFleetResponse><fleetId>f</fleetId><errorSet>";
        static const char tail[] = "</errorSet><fleetInstanceSet/></CreateFleetResponse>";
        const char *zones[] = { "us-west-2a", "us-west-2b", "us-west-2c" };
        size_t cap = 300 * 400 + sizeof(head) + sizeof(tail), len;
        char *doc = malloc(cap);
        fleet_result r;

        cr_assert_not_null(doc);
        len = (size_t) snprintf(doc, cap, "%s", head);
        for (int t = 0; t < 100; t++)
                for (int z = 0; z < 3; z++)
                        len += (size_t) snprintf(doc + len, cap - len,
                                "<item><launchTemplateAndOverrides><overrides>"
                                "<instanceType>c%d.large</instanceType>"
                                "<availabilityZone>%s</availabilityZone></overrides>"
                                "</launchTemplateAndOverrides><lifecycle>spot</lifecycle>"
                                "<errorCode>InsufficientInstanceCapacity</errorCode></item>",
                                t, zones[z]);
        len += (size_t) snprintf(doc + len, cap - len, "%s", tail);
        cr_assert_lt(len, cap);
        cr_assert_eq(fleet_response_parse(doc, len, &r), 0);
        cr_assert_eq(r.launched_ok, 0);
        cr_assert_eq(r.n_errors, 300);
        cr_assert_str_eq(r.errors[0].instance_type, "c0.large");
        cr_assert_str_eq(r.errors[64].instance_type, "c21.large");
        cr_assert_str_eq(r.errors[64].zone, "us-west-2b");
        cr_assert_str_eq(r.errors[299].instance_type, "c99.large");
        cr_assert_str_eq(r.errors[299].zone, "us-west-2c");
        cr_assert_str_eq(r.errors[299].code, "InsufficientInstanceCapacity");
        fleet_result_done(&r);
        free(doc);
}
