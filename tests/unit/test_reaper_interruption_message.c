/* SPDX-License-Identifier: MIT */
/* Unit tests for reaper/interruption-message.c: the interruption queue's
 * EventBridge events, as Karpenter's interruption parsers read them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reaper/interruption-message.h"

/* An EventBridge event with the metadata every one carries. */
#define EVENT(source, detail_type, detail) \
        "{\"version\":\"0\",\"id\":\"1e5527d7-bb36-4607-3370-4164db56a40e\"," \
        "\"detail-type\":\"" detail_type "\",\"source\":\"" source "\"," \
        "\"account\":\"123456789012\",\"time\":\"2026-11-05T12:00:00Z\",\"region\":\"us-west-2\"," \
        "\"resources\":[\"arn:aws:ec2:us-west-2:123456789012:instance/i-0abc\"]," \
        "\"detail\":" detail "}"

static int parse(const char *body, struct interruption_message *m, char *why) {
        return interruption_message_parse(body, strlen(body), m, why, INTERRUPTION_WHY_MAX);
}

static void expect_kind(const char *body, enum interruption_kind kind, const char *instance) {
        struct interruption_message m;
        char why[INTERRUPTION_WHY_MAX];

        cr_assert_eq(parse(body, &m, why), 0, "%s: %s", body, why);
        cr_assert_eq(m.kind, kind, "%s: kind %s", body, interruption_kind_name(m.kind));
        if (instance) {
                cr_assert_eq(m.n_instance_ids, 1);
                cr_assert_str_eq(m.instance_ids[0], instance);
        }
        interruption_message_done(&m);
}

static void expect_malformed(const char *body, const char *why_part) {
        struct interruption_message m;
        char why[INTERRUPTION_WHY_MAX];

        cr_assert_eq(parse(body, &m, why), -EBADMSG, "%s parsed", body);
        cr_assert(strstr(why, why_part), "%s: reason '%s' lacks '%s'", body, why, why_part);
        cr_assert_eq(m.n_instance_ids, 0);
        cr_assert_null(m.instance_ids);
}

Test(reaper_interruption_message, spot_interruption_warning_names_its_instance_and_drains) {
        struct interruption_message m;
        char why[INTERRUPTION_WHY_MAX];
        const char *b = EVENT("aws.ec2", "EC2 Spot Instance Interruption Warning",
                              "{\"instance-id\":\"i-0abc\",\"instance-action\":\"terminate\"}");

        cr_assert_eq(parse(b, &m, why), 0, "%s", why);
        cr_assert_eq(m.kind, INTERRUPTION_SPOT_INTERRUPTED);
        cr_assert_str_eq(interruption_kind_name(m.kind), "spot_interrupted");
        cr_assert_str_eq(m.id, "1e5527d7-bb36-4607-3370-4164db56a40e");
        cr_assert_eq(m.time_s, 1793880000); /* 2026-11-05T12:00:00Z */
        cr_assert_eq(m.n_instance_ids, 1);
        cr_assert_str_eq(m.instance_ids[0], "i-0abc");
        cr_assert_eq(interruption_action_for(m.kind), INTERRUPTION_CORDON_AND_DRAIN);
        cr_assert_str_eq(interruption_notice_for(m.kind).reason, "SpotInterrupted");
        cr_assert(interruption_notice_for(m.kind).warning);
        interruption_message_done(&m);
}

Test(reaper_interruption_message, rebalance_recommendation_records_an_event_and_does_not_drain) {
        expect_kind(EVENT("aws.ec2", "EC2 Instance Rebalance Recommendation", "{\"instance-id\":\"i-0abc\"}"),
                    INTERRUPTION_REBALANCE_RECOMMENDATION, "i-0abc");
        cr_assert_eq(interruption_action_for(INTERRUPTION_REBALANCE_RECOMMENDATION), INTERRUPTION_NO_ACTION);
        cr_assert_str_eq(interruption_notice_for(INTERRUPTION_REBALANCE_RECOMMENDATION).reason,
                         "SpotRebalanceRecommendation");
        cr_assert_not(interruption_notice_for(INTERRUPTION_REBALANCE_RECOMMENDATION).warning);
}

Test(reaper_interruption_message, scheduled_change_names_every_affected_instance) {
        struct interruption_message m;
        char why[INTERRUPTION_WHY_MAX];
        const char *b = EVENT("aws.health", "AWS Health Event",
                              "{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\","
                              "\"eventTypeCode\":\"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED\","
                              "\"affectedEntities\":[{\"entityValue\":\"i-1\"},{\"entityValue\":\"i-2\"}]}");

        cr_assert_eq(parse(b, &m, why), 0, "%s", why);
        cr_assert_eq(m.kind, INTERRUPTION_SCHEDULED_CHANGE);
        cr_assert_eq(m.n_instance_ids, 2);
        cr_assert_str_eq(m.instance_ids[0], "i-1");
        cr_assert_str_eq(m.instance_ids[1], "i-2");
        cr_assert_eq(interruption_action_for(m.kind), INTERRUPTION_CORDON_AND_DRAIN);
        cr_assert_str_eq(interruption_notice_for(m.kind).reason, "InstanceUnhealthy");
        interruption_message_done(&m);
}

Test(reaper_interruption_message, health_events_of_other_services_or_categories_are_no_ops) {
        expect_kind(EVENT("aws.health", "AWS Health Event",
                          "{\"service\":\"RDS\",\"eventTypeCategory\":\"scheduledChange\","
                          "\"affectedEntities\":[{\"entityValue\":\"db-1\"}]}"),
                    INTERRUPTION_NO_OP, NULL);
        expect_kind(EVENT("aws.health", "AWS Health Event",
                          "{\"service\":\"EC2\",\"eventTypeCategory\":\"issue\"}"),
                    INTERRUPTION_NO_OP, NULL);
}

Test(reaper_interruption_message, stopping_and_stopped_states_are_instance_stopped) {
        expect_kind(EVENT("aws.ec2", "EC2 Instance State-change Notification",
                          "{\"instance-id\":\"i-0abc\",\"state\":\"stopping\"}"),
                    INTERRUPTION_INSTANCE_STOPPED, "i-0abc");
        expect_kind(EVENT("aws.ec2", "EC2 Instance State-change Notification",
                          "{\"instance-id\":\"i-0abc\",\"state\":\"Stopped\"}"),
                    INTERRUPTION_INSTANCE_STOPPED, "i-0abc");
        cr_assert_str_eq(interruption_notice_for(INTERRUPTION_INSTANCE_STOPPED).reason, "InstanceStopping");
}

Test(reaper_interruption_message, shutting_down_and_terminated_states_are_instance_terminated) {
        expect_kind(EVENT("aws.ec2", "EC2 Instance State-change Notification",
                          "{\"instance-id\":\"i-0abc\",\"state\":\"shutting-down\"}"),
                    INTERRUPTION_INSTANCE_TERMINATED, "i-0abc");
        expect_kind(EVENT("aws.ec2", "EC2 Instance State-change Notification",
                          "{\"instance-id\":\"i-0abc\",\"state\":\"terminated\"}"),
                    INTERRUPTION_INSTANCE_TERMINATED, "i-0abc");
        cr_assert_eq(interruption_action_for(INTERRUPTION_INSTANCE_TERMINATED), INTERRUPTION_CORDON_AND_DRAIN);
        cr_assert_str_eq(interruption_notice_for(INTERRUPTION_INSTANCE_TERMINATED).reason,
                         "InstanceTerminating");
}

Test(reaper_interruption_message, pending_and_running_states_are_no_ops) {
        expect_kind(EVENT("aws.ec2", "EC2 Instance State-change Notification",
                          "{\"instance-id\":\"i-0abc\",\"state\":\"running\"}"),
                    INTERRUPTION_NO_OP, NULL);
        expect_kind(EVENT("aws.ec2", "EC2 Instance State-change Notification",
                          "{\"instance-id\":\"i-0abc\",\"state\":\"pending\"}"),
                    INTERRUPTION_NO_OP, NULL);
}

Test(reaper_interruption_message, other_events_and_later_versions_are_no_ops) {
        expect_kind(EVENT("aws.autoscaling", "EC2 Instance-terminate Lifecycle Action",
                          "{\"EC2InstanceId\":\"i-0abc\"}"),
                    INTERRUPTION_NO_OP, NULL);
        expect_kind("{\"version\":\"1\",\"source\":\"aws.ec2\","
                    "\"detail-type\":\"EC2 Spot Instance Interruption Warning\",\"detail\":{}}",
                    INTERRUPTION_NO_OP, NULL);
        cr_assert_null(interruption_notice_for(INTERRUPTION_NO_OP).reason);
        cr_assert_eq(interruption_action_for(INTERRUPTION_NO_OP), INTERRUPTION_NO_ACTION);
}

Test(reaper_interruption_message, an_empty_body_is_a_no_op) {
        struct interruption_message m;
        char why[INTERRUPTION_WHY_MAX];

        cr_assert_eq(interruption_message_parse("", 0, &m, why, sizeof(why)), 0);
        cr_assert_eq(m.kind, INTERRUPTION_NO_OP);
        interruption_message_done(&m);
}

Test(reaper_interruption_message, unknown_fields_are_ignored_wherever_they_are) {
        expect_kind("{\"version\":\"0\",\"source\":\"aws.ec2\",\"new-top-level\":{\"x\":[1,2]},"
                    "\"detail-type\":\"EC2 Spot Instance Interruption Warning\","
                    "\"detail\":{\"instance-id\":\"i-0abc\",\"instance-action\":\"stop\","
                    "\"added-in-2030\":true}}",
                    INTERRUPTION_SPOT_INTERRUPTED, "i-0abc");
}

Test(reaper_interruption_message, a_body_that_is_not_json_is_malformed) {
        expect_malformed("this is not json", "not JSON");
        expect_malformed("{\"version\":\"0\",", "not JSON");
        expect_malformed("[\"version\",\"0\"]", "not a JSON object");
        expect_malformed("\"just a string\"", "not JSON"); /* jansson wants an array or object */
}

Test(reaper_interruption_message, a_missing_envelope_field_is_malformed) {
        expect_malformed("{\"source\":\"aws.ec2\",\"detail-type\":\"EC2 Spot Instance Interruption Warning\","
                         "\"detail\":{\"instance-id\":\"i-1\"}}", "field version is missing");
        expect_malformed("{\"version\":\"0\",\"detail-type\":\"EC2 Spot Instance Interruption Warning\","
                         "\"detail\":{\"instance-id\":\"i-1\"}}", "field source is missing");
        expect_malformed("{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail\":{\"instance-id\":\"i-1\"}}",
                         "field detail-type is missing");
}

Test(reaper_interruption_message, a_known_event_without_what_it_needs_is_malformed) {
        expect_malformed(EVENT("aws.ec2", "EC2 Spot Instance Interruption Warning", "{}"),
                         "field detail.instance-id is missing");
        expect_malformed("{\"version\":\"0\",\"source\":\"aws.ec2\","
                         "\"detail-type\":\"EC2 Spot Instance Interruption Warning\"}",
                         "field detail is missing");
        expect_malformed(EVENT("aws.ec2", "EC2 Instance State-change Notification",
                               "{\"instance-id\":\"i-0abc\"}"), "field detail.state is missing");
        expect_malformed(EVENT("aws.health", "AWS Health Event",
                               "{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\"}"),
                         "field detail.affectedEntities is missing");
        expect_malformed(EVENT("aws.health", "AWS Health Event",
                               "{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\","
                               "\"affectedEntities\":[{\"entityValue\":\"i-1\"},{}]}"),
                         "field detail.affectedEntities[1].entityValue is missing");
}

Test(reaper_interruption_message, a_field_of_the_wrong_type_is_malformed) {
        expect_malformed("{\"version\":0,\"source\":\"aws.ec2\",\"detail-type\":\"x\"}",
                         "field version is not a string");
        expect_malformed(EVENT("aws.ec2", "EC2 Spot Instance Interruption Warning",
                               "{\"instance-id\":[\"i-0abc\"]}"),
                         "field detail.instance-id is not a string");
        expect_malformed(EVENT("aws.ec2", "EC2 Spot Instance Interruption Warning", "\"i-0abc\""),
                         "field detail is not an object");
        expect_malformed("{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"x\",\"resources\":\"i-1\"}",
                         "field resources is not an array");
        expect_malformed("{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"x\",\"resources\":[1]}",
                         "field resources[0] is not a string");
        expect_malformed("{\"version\":\"0\",\"source\":\"aws.ec2\",\"detail-type\":\"x\",\"time\":\"yesterday\"}",
                         "field time is not an RFC 3339 UTC time");
        expect_malformed(EVENT("aws.health", "AWS Health Event",
                               "{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\","
                               "\"affectedEntities\":{\"entityValue\":\"i-1\"}}"),
                         "field detail.affectedEntities is not an array");
        expect_malformed(EVENT("aws.health", "AWS Health Event",
                               "{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\","
                               "\"affectedEntities\":[\"i-1\"]}"),
                         "field detail.affectedEntities[0] is not an object");
}

Test(reaper_interruption_message, an_sns_envelope_is_not_unwrapped_and_is_malformed) {
        /* Karpenter reads EventBridge's own messages only; a queue fed through
         * SNS without raw message delivery holds envelopes like this one. */
        expect_malformed("{\"Type\":\"Notification\",\"MessageId\":\"22b80b92\","
                         "\"TopicArn\":\"arn:aws:sns:us-west-2:123456789012:t\","
                         "\"Message\":\"{\\\"version\\\":\\\"0\\\",\\\"source\\\":\\\"aws.ec2\\\"}\"}",
                         "field version is missing");
}

Test(reaper_interruption_message, a_key_given_twice_is_malformed) {
        expect_malformed("{\"version\":\"0\",\"source\":\"aws.ec2\",\"source\":\"aws.health\","
                         "\"detail-type\":\"x\"}", "not JSON");
}

Test(reaper_interruption_message, a_body_longer_than_sqs_allows_is_malformed) {
        static char big[INTERRUPTION_MESSAGE_MAX_BYTES + 2];
        struct interruption_message m;
        char why[INTERRUPTION_WHY_MAX];

        memset(big, ' ', sizeof(big) - 1);
        big[0] = '{';
        big[sizeof(big) - 2] = '}';
        cr_assert_eq(interruption_message_parse(big, sizeof(big) - 1, &m, why, sizeof(why)), -EBADMSG);
        cr_assert(strstr(why, "longer than SQS allows"), "%s", why);
}

Test(reaper_interruption_message, too_many_affected_instances_is_malformed) {
        static char body[64 * 1024 + 2048];
        size_t n;

        n = (size_t)snprintf(body, sizeof(body),
                             "{\"version\":\"0\",\"source\":\"aws.health\",\"detail-type\":\"AWS Health Event\","
                             "\"detail\":{\"service\":\"EC2\",\"eventTypeCategory\":\"scheduledChange\","
                             "\"affectedEntities\":[");
        for (int i = 0; i <= INTERRUPTION_MESSAGE_MAX_INSTANCES; i++)
                n += (size_t)snprintf(body + n, sizeof(body) - n, "%s{\"entityValue\":\"i-%d\"}",
                                      i ? "," : "", i);
        snprintf(body + n, sizeof(body) - n, "]}}");
        expect_malformed(body, "more than");
}
