/*
 * kanna-sim's AWS side over real HTTP: libcurl requests signed with
 * common/sigv4.h against a server on an ephemeral loopback port. Covers
 * CreateFleet (ICE fallback, ClientToken idempotency), DescribeInstances
 * filters, TerminateInstances, auth failures, faults, SSM, STS and SQS.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <time.h>

#include "common/sigv4.h"
#include "common/util.h"
#include "sim/aws.h"

#define TEST_AKID "AKIASIMTEST000000001"
#define TEST_SECRET "simTestSecretKeyDoNotUseAnywhere0000000"

static struct sim_aws *aws;
static char host[64];

struct reply {
	long status;
	char *body;
	size_t len;
};

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
	struct reply *r = userdata;
	char *b = realloc(r->body, r->len + size * n + 1);

	cr_assert_not_null(b);
	memcpy(b + r->len, p, size * n);
	r->len += size * n;
	b[r->len] = '\0';
	r->body = b;
	return size * n;
}

static void start(unsigned pending_ms, unsigned shutdown_ms)
{
	struct sim_aws_config cfg;

	sim_aws_config_init(&cfg);
	cfg.access_key_id = TEST_AKID;
	cfg.secret_access_key = TEST_SECRET;
	cfg.catalog_path = KANNA_SRCDIR "/data/instance-types.tsv";
	cfg.cluster_name = "demo";
	cfg.seed = 42;
	cfg.pending_ms = pending_ms;
	cfg.shutdown_ms = shutdown_ms;
	cr_assert_geq(sim_aws_new(&aws, &cfg), 0);
	cr_assert_geq(sim_aws_start(aws, 0), 0);
	cr_assert_gt(sim_aws_port(aws), 0);
	snprintf(host, sizeof(host), "127.0.0.1:%u", (unsigned)sim_aws_port(aws));
}

static void setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	start(0, 0);
}

static void teardown(void)
{
	aws = sim_aws_free(aws);
}

TestSuite(sim_aws, .init = setup, .fini = teardown, .timeout = 60);

struct call {
	const char *service;    /* credential scope service */
	const char *target;     /* X-Amz-Target for JSON protocols */
	const char *akid;       /* default TEST_AKID */
	const char *secret;     /* default TEST_SECRET */
	time_t when;            /* default now */
	const char *send_body;  /* body actually sent, if not the signed one */
	bool unsigned_request;
	const char *region;     /* credential scope region, default us-west-2 */
};

static struct reply call_full(const struct call *c, const char *path, const char *body)
{
	struct sigv4_header hv[4];
	struct sigv4_request req = { .method = "POST", .path = path, .query = "", .headers = hv };
	struct sigv4_credentials creds = { c->akid ?: TEST_AKID, c->secret ?: TEST_SECRET, NULL };
	const char *ctype = c->target ? (strncmp(c->target, "AmazonSQS", 9) == 0 ?
						 "application/x-amz-json-1.0" : "application/x-amz-json-1.1")
				      : "application/x-www-form-urlencoded; charset=utf-8";
	char date[SIGV4_AMZ_DATE_LEN + 1], payload[65], url[256], line[4096];
	struct curl_slist *h = NULL;
	struct reply r = { 0 };
	char *authz = NULL;
	CURL *curl;

	cr_assert_geq(sigv4_format_amz_date(c->when ? c->when : time(NULL), date), 0);
	hv[req.n_headers++] = (struct sigv4_header){ "Host", host };
	hv[req.n_headers++] = (struct sigv4_header){ "Content-Type", ctype };
	hv[req.n_headers++] = (struct sigv4_header){ "X-Amz-Date", date };
	if (c->target)
		hv[req.n_headers++] = (struct sigv4_header){ "X-Amz-Target", c->target };
	cr_assert_geq(sigv4_sha256_hex(body, strlen(body), payload), 0);
	req.payload_sha256_hex = payload;
	if (!c->unsigned_request) {
		cr_assert_geq(sigv4_sign(&req, &creds, c->region ?: "us-west-2", c->service, date, &authz), 0);
		snprintf(line, sizeof(line), "Authorization: %s", authz);
		h = curl_slist_append(h, line);
	}
	for (size_t i = 0; i < req.n_headers; i++) {
		snprintf(line, sizeof(line), "%s: %s", hv[i].name, hv[i].value);
		h = curl_slist_append(h, line);
	}
	snprintf(url, sizeof(url), "http://%s%s", host, path);
	curl = curl_easy_init();
	cr_assert_not_null(curl);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, c->send_body ? c->send_body : body);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
	cr_assert_eq(curl_easy_perform(curl), CURLE_OK);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(curl);
	curl_slist_free_all(h);
	free(authz);
	if (!r.body)
		r.body = strdup("");
	return r;
}

static struct reply ec2(const char *params)
{
	char body[8192];

	snprintf(body, sizeof(body), "Version=2016-11-15&%s", params);
	return call_full(&(struct call){ .service = "ec2" }, "/", body);
}

static struct reply admin(const char *method, const char *path, const char *json)
{
	char url[256];
	struct reply r = { 0 };
	CURL *curl = curl_easy_init();

	snprintf(url, sizeof(url), "http://%s%s", host, path);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	if (streq_ptr(method, "POST"))
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
	cr_assert_eq(curl_easy_perform(curl), CURLE_OK);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(curl);
	return r;
}

/* The text of the n-th (0-based) <tag>...</tag> in an XML body, or "". */
static const char *xml_nth(const char *body, const char *tag, int n, char *out, size_t len)
{
	char open[128], close[128];
	const char *p = body, *e;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	out[0] = '\0';
	for (int i = 0; p && i <= n; i++) {
		p = strstr(p, open);
		if (p && i < n)
			p += strlen(open);
	}
	if (!p)
		return out;
	p += strlen(open);
	e = strstr(p, close);
	if (e)
		snprintf(out, len, "%.*s", (int)(e - p), p);
	return out;
}

static int xml_count(const char *body, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(body, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void create_template(const char *name)
{
	char params[512];
	struct reply r;

	snprintf(params, sizeof(params), "Action=CreateLaunchTemplate&LaunchTemplateName=%s", name);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
}

static const char *subnet(char zone, char *out, size_t len)
{
	char params[256], buf[64];
	struct reply r;

	snprintf(params, sizeof(params),
		 "Action=DescribeSubnets&Filter.1.Name=availability-zone&Filter.1.Value.1=us-west-2%c", zone);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	snprintf(out, len, "%s", xml_nth(r.body, "subnetId", 0, buf, sizeof(buf)));
	cr_assert(strncmp(out, "subnet-", 7) == 0, "%s", r.body);
	free(r.body);
	return out;
}

/* A two-override on-demand fleet: m5.large in zone a, m5.2xlarge in zone b. */
static struct reply fleet(const char *extra)
{
	char a[64], b[64], params[2048];

	subnet('a', a, sizeof(a));
	subnet('b', b, sizeof(b));
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant"
		 "&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand"
		 "&OnDemandOptions.AllocationStrategy=lowest-price"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-demo"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version=%%24Latest"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large"
		 "&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s"
		 "&LaunchTemplateConfigs.1.Overrides.2.InstanceType=m5.2xlarge"
		 "&LaunchTemplateConfigs.1.Overrides.2.SubnetId=%s"
		 "&TagSpecification.1.ResourceType=instance"
		 "&TagSpecification.1.Tag.1.Key=karpenter.sh%%2Fnodepool"
		 "&TagSpecification.1.Tag.1.Value=default%s",
		 a, b, extra ? extra : "");
	return ec2(params);
}

Test(sim_aws, create_fleet_launches_the_cheapest_override)
{
	struct reply r;
	char buf[128];

	create_template("lt-demo");
	r = fleet(NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<errorSet></errorSet>"), "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "instanceType", 0, buf, sizeof(buf)),
			 "m5.large", "%s", r.body);
	cr_assert_null(strstr(r.body, "m5.2xlarge"), "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceIds><item>i-"), 1);
	free(r.body);
}

Test(sim_aws, create_fleet_falls_to_next_override_on_injected_ice)
{
	struct reply r, f;
	char buf[128];

	create_template("lt-demo");
	f = admin("POST", "/_sim/faults",
		  "{\"insufficientCapacity\":[{\"instanceType\":\"m5.large\",\"zone\":\"us-west-2a\",\"capacityType\":\"on-demand\"}]}");
	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	r = fleet(NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "errorCode", 0, buf, sizeof(buf)), "InsufficientInstanceCapacity", "%s", r.body);
	cr_assert(strstr(r.body, "<fleetInstanceSet><item>"), "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "instanceType", 0, buf, sizeof(buf)),
			 "m5.2xlarge", "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<fleetInstanceSet>"), "availabilityZone", 0, buf, sizeof(buf)),
			 "us-west-2b", "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceIds><item>i-"), 1);
	free(r.body);
}

Test(sim_aws, same_client_token_returns_same_instance_and_launches_once)
{
	struct reply a, b, d;
	char ia[64], ib[64];

	create_template("lt-demo");
	a = fleet("&ClientToken=token-1");
	b = fleet("&ClientToken=token-1");
	cr_assert_eq(a.status, 200, "%s", a.body);
	cr_assert_eq(b.status, 200, "%s", b.body);
	xml_nth(strstr(a.body, "<instanceIds>"), "item", 0, ia, sizeof(ia));
	xml_nth(strstr(b.body, "<instanceIds>"), "item", 0, ib, sizeof(ib));
	cr_assert(strncmp(ia, "i-", 2) == 0, "%s", a.body);
	cr_assert_str_eq(ia, ib);
	d = ec2("Action=DescribeInstances");
	cr_assert_eq(xml_count(d.body, "<instanceId>"), 1, "%s", d.body);
	free(a.body);
	free(b.body);
	free(d.body);
}

Test(sim_aws, same_client_token_with_other_parameters_is_a_mismatch)
{
	struct reply a, b;
	char buf[128];

	create_template("lt-demo");
	a = fleet("&ClientToken=token-2");
	b = fleet("&ClientToken=token-2&TagSpecification.1.Tag.2.Key=extra&TagSpecification.1.Tag.2.Value=1");
	cr_assert_eq(a.status, 200);
	cr_assert_eq(b.status, 400, "%s", b.body);
	cr_assert_str_eq(xml_nth(b.body, "Code", 0, buf, sizeof(buf)), "IdempotentParameterMismatch");
	free(a.body);
	free(b.body);
}

static void launch_tagged(const char *pool, char *id, size_t len)
{
	char extra[256];
	struct reply r;

	snprintf(extra, sizeof(extra), "&TagSpecification.1.Tag.2.Key=pool&TagSpecification.1.Tag.2.Value=%s", pool);
	r = fleet(extra);
	cr_assert_eq(r.status, 200, "%s", r.body);
	xml_nth(strstr(r.body, "<instanceIds>"), "item", 0, id, len);
	cr_assert(strncmp(id, "i-", 2) == 0, "%s", r.body);
	free(r.body);
}

Test(sim_aws, describe_instances_filters_by_tag_and_state)
{
	char a[64], b[64], buf[64], params[128];
	struct reply r;

	create_template("lt-demo");
	launch_tagged("alpha", a, sizeof(a));
	launch_tagged("beta", b, sizeof(b));
	r = ec2("Action=DescribeInstances&Filter.1.Name=tag%3Apool&Filter.1.Value.1=beta");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 1);
	cr_assert_str_eq(xml_nth(r.body, "instanceId", 0, buf, sizeof(buf)), b);
	free(r.body);

	r = ec2("Action=DescribeInstances&Filter.1.Name=tag-key&Filter.1.Value.1=pool"
		"&Filter.2.Name=instance-state-name&Filter.2.Value.1=running");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 2, "%s", r.body);
	free(r.body);

	snprintf(params, sizeof(params), "Action=TerminateInstances&InstanceId.1=%s", a);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeInstances&Filter.1.Name=instance-state-name&Filter.1.Value.1=running");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 1, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "instanceId", 0, buf, sizeof(buf)), b);
	free(r.body);
	r = ec2("Action=DescribeInstances&Filter.1.Name=instance-state-name&Filter.1.Value.1=terminated");
	cr_assert_str_eq(xml_nth(r.body, "instanceId", 0, buf, sizeof(buf)), a);
	free(r.body);
}

Test(sim_aws, describe_instances_pages_with_next_token)
{
	char id[64];
	struct reply r;

	create_template("lt-demo");
	for (int i = 0; i < 7; i++)
		launch_tagged("page", id, sizeof(id));
	r = ec2("Action=DescribeInstances&MaxResults=5");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 5, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "nextToken", 0, id, sizeof(id)), "sim-5");
	free(r.body);
	r = ec2("Action=DescribeInstances&MaxResults=5&NextToken=sim-5");
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 2, "%s", r.body);
	cr_assert_null(strstr(r.body, "<nextToken>"));
	free(r.body);
}

Test(sim_aws, unknown_instance_id_is_not_found)
{
	struct reply r = ec2("Action=TerminateInstances&InstanceId.1=i-0123456789abcdef0");
	char buf[64];

	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InvalidInstanceID.NotFound");
	free(r.body);
}

Test(sim_aws, tampered_body_gets_signature_does_not_match)
{
	struct reply r = call_full(&(struct call){ .service = "ec2",
						   .send_body = "Version=2016-11-15&Action=DescribeInstancez" },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 403, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "SignatureDoesNotMatch");
	cr_assert(strstr(r.body, "<Response><Errors><Error>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, wrong_key_gets_auth_failure)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .akid = "AKIAWRONGWRONGWRONG0" },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 401, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "AuthFailure");
	free(r.body);
}

Test(sim_aws, wrong_secret_gets_signature_does_not_match)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .secret = "not-the-secret" },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 403, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "SignatureDoesNotMatch");
	free(r.body);
}

Test(sim_aws, skewed_date_gets_request_expired)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .when = time(NULL) - 3600 },
				   "/", "Version=2016-11-15&Action=DescribeInstances");
	char buf[64];

	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "RequestExpired");
	free(r.body);
}

Test(sim_aws, unsigned_request_is_refused)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .unsigned_request = true },
				   "/", "Version=2016-11-15&Action=DescribeInstances");

	cr_assert_eq(r.status, 401, "%s", r.body);
	cr_assert(strstr(r.body, "MissingAuthenticationToken"));
	free(r.body);
}

Test(sim_aws, throttling_fault_returns_request_limit_exceeded)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"throttleRate\": 1}");
	struct reply r;
	char buf[64];

	cr_assert_eq(f.status, 200, "%s", f.body);
	r = ec2("Action=DescribeAvailabilityZones");
	cr_assert_eq(r.status, 503, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "RequestLimitExceeded");
	free(r.body);
	free(f.body);
	f = admin("POST", "/_sim/faults", "{}");
	free(f.body);
	r = ec2("Action=DescribeAvailabilityZones");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<zoneName>"), 3);
	free(r.body);
}

Test(sim_aws, malformed_faults_are_rejected_and_change_nothing)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"throttleRate\": 2}");

	cr_assert_eq(f.status, 400, "%s", f.body);
	free(f.body);
	f = admin("GET", "/_sim/faults", NULL);
	cr_assert(strstr(f.body, "\"throttleRate\":0"), "%s", f.body);
	free(f.body);
}

Test(sim_aws, unknown_action_gets_invalid_action)
{
	struct reply r = ec2("Action=LaunchRockets");
	char buf[64];

	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InvalidAction");
	free(r.body);
}

Test(sim_aws, missing_parameter_is_named)
{
	struct reply r = ec2("Action=CreateFleet&Type=instant");
	char buf[256];

	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "MissingParameter");
	cr_assert(strstr(xml_nth(r.body, "Message", 0, buf, sizeof(buf)), "TotalTargetCapacity"));
	free(r.body);
}

Test(sim_aws, launch_template_names_are_unique)
{
	struct reply r;
	char buf[128];

	create_template("lt-once");
	r = ec2("Action=CreateLaunchTemplate&LaunchTemplateName=lt-once");
	cr_assert_eq(r.status, 400);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)),
			 "InvalidLaunchTemplateName.AlreadyExistsException");
	free(r.body);
	r = ec2("Action=DeleteLaunchTemplate&LaunchTemplateName=lt-once");
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeLaunchTemplates&LaunchTemplateName.1=lt-once");
	cr_assert_eq(r.status, 400);
	free(r.body);
}

Test(sim_aws, describe_instance_types_reports_catalog_values)
{
	struct reply r = ec2("Action=DescribeInstanceTypes&InstanceType.1=m5.large&InstanceType.2=m6g.xlarge");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceType>"), 2);
	cr_assert(strstr(r.body, "<instanceType>m5.large</instanceType>"));
	cr_assert(strstr(r.body, "<defaultVCpus>2</defaultVCpus>"));
	cr_assert(strstr(r.body, "<sizeInMiB>8192</sizeInMiB>"));
	cr_assert(strstr(r.body, "<item>arm64</item>"));
	cr_assert_str_eq(xml_nth(r.body, "maximumNetworkInterfaces", 0, buf, sizeof(buf)), "3");
	free(r.body);
	r = ec2("Action=DescribeInstanceTypes&MaxResults=100");
	cr_assert_eq(xml_count(r.body, "<instanceType>"), 100);
	cr_assert_str_eq(xml_nth(r.body, "nextToken", 0, buf, sizeof(buf)), "sim-100");
	free(r.body);
}

Test(sim_aws, subnets_and_security_groups_carry_the_discovery_tag)
{
	struct reply r = ec2("Action=DescribeSubnets&Filter.1.Name=tag%3Akarpenter.sh%2Fdiscovery&Filter.1.Value.1=demo");

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<subnetId>"), 3, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeSubnets&Filter.1.Name=tag%3Akarpenter.sh%2Fdiscovery&Filter.1.Value.1=other");
	cr_assert_eq(xml_count(r.body, "<subnetId>"), 0, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeSecurityGroups&Filter.1.Name=tag-key&Filter.1.Value.1=karpenter.sh%2Fdiscovery");
	cr_assert_eq(xml_count(r.body, "<groupId>"), 1, "%s", r.body);
	free(r.body);
}

Test(sim_aws, spot_prices_are_below_on_demand_and_deterministic)
{
	struct reply r = ec2("Action=DescribeSpotPriceHistory&InstanceType.1=m5.large&ProductDescription.1=Linux%2FUNIX");
	char buf[64];
	double p;

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<spotPrice>"), 3);
	p = strtod(xml_nth(r.body, "spotPrice", 0, buf, sizeof(buf)), NULL);
	cr_assert(p >= 0.096 * 0.3 - 1e-6 && p <= 0.096 * 0.7 + 1e-6, "%f", p);
	free(r.body);
}

Test(sim_aws, ssm_alias_resolves_to_a_sim_ami)
{
	struct reply r = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
				   "{\"Name\":\"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/recommended/image_id\"}");
	json_t *j = json_loads(r.body, 0, NULL);
	const char *ami = json_string_value(json_object_get(json_object_get(j, "Parameter"), "Value"));
	char params[256];
	struct reply d;

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(ami && strncmp(ami, "ami-", 4) == 0, "%s", r.body);
	snprintf(params, sizeof(params), "Action=DescribeImages&ImageId.1=%s", ami);
	d = ec2(params);
	cr_assert_eq(d.status, 200, "%s", d.body);
	cr_assert(strstr(d.body, "<architecture>arm64</architecture>"), "%s", d.body);
	cr_assert(strstr(d.body, "amazon-eks-node-al2023-arm64-standard-1.30"), "%s", d.body);
	json_decref(j);
	free(r.body);
	free(d.body);

	r = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/eks/optimized-ami/9.99/amazon-linux-2/recommended/image_id\"}");
	cr_assert_eq(r.status, 400);
	cr_assert(strstr(r.body, "\"__type\":\"ParameterNotFound\""), "%s", r.body);
	free(r.body);
}

Test(sim_aws, sts_get_caller_identity_names_the_account)
{
	struct reply r = call_full(&(struct call){ .service = "sts" }, "/",
				   "Action=GetCallerIdentity&Version=2011-06-15");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Account", 0, buf, sizeof(buf)), "111122223333");
	free(r.body);
	r = call_full(&(struct call){ .service = "sts", .akid = "AKIAWRONGWRONGWRONG0" }, "/",
		      "Action=GetCallerIdentity&Version=2011-06-15");
	cr_assert_eq(r.status, 403);
	cr_assert(strstr(r.body, "<ErrorResponse"), "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InvalidClientTokenId");
	free(r.body);
}

Test(sim_aws, sts_assume_role_with_web_identity_hands_out_sim_credentials)
{
	struct reply r = call_full(&(struct call){ .service = "sts", .unsigned_request = true }, "/",
				   "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
				   "&RoleArn=arn%3Aaws%3Aiam%3A%3A111122223333%3Arole%2Fkanna"
				   "&RoleSessionName=kanna&WebIdentityToken=eyJhbGciOi");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "AccessKeyId", 0, buf, sizeof(buf)), TEST_AKID);
	free(r.body);
}

Test(sim_aws, spot_interruption_is_queued_and_deleted)
{
	char a[64], b[64], params[2048], json[512], url[256];
	struct reply r, q;
	json_t *j;
	const char *receipt, *body;

	create_template("lt-demo");
	subnet('a', a, sizeof(a));
	subnet('b', b, sizeof(b));
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=spot"
		 "&SpotOptions.AllocationStrategy=price-capacity-optimized"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-demo"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=c5.large&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s"
		 "&LaunchTemplateConfigs.1.Overrides.2.InstanceType=c5.large&LaunchTemplateConfigs.1.Overrides.2.SubnetId=%s",
		 a, b);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<lifecycle>spot</lifecycle>"), "%s", r.body);
	xml_nth(strstr(r.body, "<instanceIds>"), "item", 0, a, sizeof(a));
	free(r.body);

	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"]}", a);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);

	snprintf(url, sizeof(url), "{\"QueueName\":\"demo\"}");
	q = call_full(&(struct call){ .service = "sqs", .target = "AmazonSQS.GetQueueUrl" }, "/", url);
	cr_assert_eq(q.status, 200, "%s", q.body);
	j = json_loads(q.body, 0, NULL);
	snprintf(json, sizeof(json), "{\"QueueUrl\":\"%s\",\"MaxNumberOfMessages\":10,\"WaitTimeSeconds\":1}",
		 json_string_value(json_object_get(j, "QueueUrl")));
	json_decref(j);
	free(q.body);
	r = call_full(&(struct call){ .service = "sqs", .target = "AmazonSQS.ReceiveMessage" }, "/", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	body = json_string_value(json_object_get(json_array_get(json_object_get(j, "Messages"), 0), "Body"));
	receipt = json_string_value(json_object_get(json_array_get(json_object_get(j, "Messages"), 0), "ReceiptHandle"));
	cr_assert(body && strstr(body, "EC2 Spot Instance Interruption Warning"), "%s", r.body);
	cr_assert(strstr(body, a), "%s", body);
	snprintf(params, sizeof(params), "{\"QueueUrl\":\"http://%s/111122223333/demo\",\"ReceiptHandle\":\"%s\"}", host, receipt);
	q = call_full(&(struct call){ .service = "sqs", .target = "AmazonSQS.DeleteMessage" }, "/", params);
	cr_assert_eq(q.status, 200, "%s", q.body);
	free(q.body);
	json_decref(j);
	free(r.body);
}

static int count_instance(const struct sim_aws_instance_info *info, void *userdata)
{
	int *n = userdata;

	cr_assert_str_eq(info->capacity_type, "on-demand");
	cr_assert_str_eq(info->arch, "amd64");
	cr_assert_gt(info->max_pods, 0);
	(*n)++;
	return 0;
}

Test(sim_aws, status_reports_instances_and_cost)
{
	struct reply r;
	char id[64];
	json_t *j;
	int n = 0;

	create_template("lt-demo");
	launch_tagged("status", id, sizeof(id));
	cr_assert_eq(sim_aws_foreach_instance(aws, count_instance, &n), 0);
	cr_assert_eq(n, 1);
	r = admin("GET", "/_sim/status", NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	cr_assert_not_null(j, "%s", r.body);
	cr_assert_eq(json_array_size(json_object_get(j, "instances")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "instances"), 0), "instanceId")), id);
	cr_assert(json_real_value(json_object_get(json_array_get(json_object_get(j, "instances"), 0), "pricePerHour")) > 0.09);
	cr_assert_gt(json_array_size(json_object_get(j, "timeline")), 0);
	json_decref(j);
	free(r.body);
}

Test(sim_aws, write_env_exports_endpoint_and_credentials)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char want[128];

	cr_assert_eq(sim_aws_write_env(aws, f), 0);
	fclose(f);
	snprintf(want, sizeof(want), "export AWS_ENDPOINT_URL_EC2='http://%s'", host);
	cr_assert(strstr(buf, want), "%s", buf);
	cr_assert(strstr(buf, "export AWS_ACCESS_KEY_ID='" TEST_AKID "'"), "%s", buf);
	cr_assert(strstr(buf, "export AWS_REGION='us-west-2'"), "%s", buf);
	cr_assert(strstr(buf, "export KANNA_CLUSTER_NAME='demo'"), "%s", buf);
	cr_assert(strstr(buf, "export KANNA_INTERRUPTION_QUEUE='demo'"), "%s", buf);
	free(buf);
}

Test(sim_aws, terminate_moves_through_shutting_down_to_terminated)
{
	struct reply r;
	char id[64], params[128], buf[64];

	aws = sim_aws_free(aws);
	start(0, 300);
	create_template("lt-demo");
	launch_tagged("slow", id, sizeof(id));
	snprintf(params, sizeof(params), "Action=TerminateInstances&InstanceId.1=%s", id);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<currentState>"), "name", 0, buf, sizeof(buf)), "shutting-down");
	cr_assert_str_eq(xml_nth(strstr(r.body, "<previousState>"), "name", 0, buf, sizeof(buf)), "running");
	free(r.body);
	usleep(400 * 1000);
	snprintf(params, sizeof(params), "Action=DescribeInstances&InstanceId.1=%s", id);
	r = ec2(params);
	cr_assert_str_eq(xml_nth(strstr(r.body, "<instanceState>"), "name", 0, buf, sizeof(buf)), "terminated", "%s", r.body);
	free(r.body);
}

static struct reply get_ec2(const char *query)
{
	struct sigv4_header hv[2];
	struct sigv4_request req = { .method = "GET", .path = "/", .query = query, .headers = hv,
				     .n_headers = 2, .payload_sha256_hex = SIGV4_EMPTY_PAYLOAD_SHA256 };
	struct sigv4_credentials creds = { TEST_AKID, TEST_SECRET, NULL };
	char date[SIGV4_AMZ_DATE_LEN + 1], url[512], line[2048];
	struct curl_slist *h = NULL;
	struct reply r = { 0 };
	char *authz = NULL;
	CURL *curl = curl_easy_init();

	cr_assert_geq(sigv4_format_amz_date(time(NULL), date), 0);
	hv[0] = (struct sigv4_header){ "Host", host };
	hv[1] = (struct sigv4_header){ "X-Amz-Date", date };
	cr_assert_geq(sigv4_sign(&req, &creds, "us-west-2", "ec2", date, &authz), 0);
	snprintf(line, sizeof(line), "Authorization: %s", authz);
	h = curl_slist_append(h, line);
	snprintf(line, sizeof(line), "X-Amz-Date: %s", date);
	h = curl_slist_append(h, line);
	snprintf(url, sizeof(url), "http://%s/?%s", host, query);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r);
	cr_assert_eq(curl_easy_perform(curl), CURLE_OK);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(curl);
	curl_slist_free_all(h);
	free(authz);
	return r;
}

Test(sim_aws, get_with_a_signed_query_string_is_served)
{
	struct reply r = get_ec2("Action=DescribeAvailabilityZones&Version=2016-11-15&ZoneName.1=us-west-2c");

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<zoneName>"), 1, "%s", r.body);
	cr_assert(strstr(r.body, "<zoneId>usw2-az3</zoneId>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, error_rate_fault_returns_internal_error)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"errorRate\": 1}");
	struct reply r;
	char buf[64];

	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	r = ec2("Action=DescribeInstances");
	cr_assert_eq(r.status, 500, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InternalError");
	free(r.body);
	r = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id\"}");
	cr_assert_eq(r.status, 500, "%s", r.body);
	cr_assert(strstr(r.body, "\"__type\":\"InternalServerError\""), "%s", r.body);
	free(r.body);
}

Test(sim_aws, latency_fault_delays_answers)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"latencyMs\": 300}");
	struct timespec a, b;
	struct reply r;
	double ms;

	free(f.body);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = ec2("Action=DescribeAvailabilityZones");
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	cr_assert_eq(r.status, 200);
	cr_assert_geq(ms, 290, "%f ms", ms);
	free(r.body);
}

Test(sim_aws, throttle_budget_allows_only_n_requests_per_second)
{
	struct reply f = admin("POST", "/_sim/faults", "{\"throttlePerSecond\": 2}");
	int throttled = 0;

	free(f.body);
	for (int i = 0; i < 6; i++) {
		struct reply r = ec2("Action=DescribeAvailabilityZones");

		throttled += r.status == 503;
		free(r.body);
	}
	/* Six calls straddle at most two one-second windows. */
	cr_assert_geq(throttled, 2);
	cr_assert_leq(throttled, 4);
}

Test(sim_aws, bad_faults_and_unknown_admin_paths_are_client_errors)
{
	struct reply r = admin("POST", "/_sim/faults", "{\"latencyMs\": -1}");

	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);
	r = admin("GET", "/_sim/nothing", NULL);
	cr_assert_eq(r.status, 404, "%s", r.body);
	free(r.body);
	r = admin("POST", "/_sim/interrupt", "{\"instanceIds\":[\"i-0000\"]}");
	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);
}

Test(sim_aws, architecture_mismatch_between_ami_and_type_is_an_override_error)
{
	char a[64], params[1024], buf[128];
	struct reply s, r;
	json_t *j;

	s = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id\"}");
	j = json_loads(s.body, 0, NULL);
	snprintf(params, sizeof(params), "Action=CreateLaunchTemplate&LaunchTemplateName=lt-x86&LaunchTemplateData.ImageId=%s",
		 json_string_value(json_object_get(json_object_get(j, "Parameter"), "Value")));
	json_decref(j);
	free(s.body);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	subnet('a', a, sizeof(a));
	snprintf(params, sizeof(params),
		 "Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1"
		 "&TargetCapacitySpecification.DefaultTargetCapacityType=on-demand"
		 "&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=lt-x86"
		 "&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m6g.large&LaunchTemplateConfigs.1.Overrides.1.SubnetId=%s",
		 a);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "errorCode", 0, buf, sizeof(buf)), "InvalidParameterValue", "%s", r.body);
	cr_assert(strstr(r.body, "<fleetInstanceSet></fleetInstanceSet>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, sqs_query_protocol_receives_and_deletes_in_xml)
{
	char id[64], json[128], body[512], receipt[128], msg[2048];
	struct reply r;

	create_template("lt-demo");
	launch_tagged("q", id, sizeof(id));
	r = admin("POST", "/_sim/faults", "{}");
	free(r.body);
	/* On-demand instances cannot be interrupted; spot ones can. */
	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"]}", id);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 400, "%s", r.body);
	free(r.body);

	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo",
		      "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<ReceiveMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><ReceiveMessageResult></ReceiveMessageResult>"), "%s", r.body);
	free(r.body);

	r = call_full(&(struct call){ .service = "sqs" }, "/",
		      "Action=GetQueueUrl&Version=2012-11-05&QueueName=demo");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(xml_nth(r.body, "QueueUrl", 0, msg, sizeof(msg)), "/111122223333/demo"), "%s", r.body);
	free(r.body);

	r = call_full(&(struct call){ .service = "sqs" }, "/",
		      "Action=GetQueueUrl&Version=2012-11-05&QueueName=other");
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, msg, sizeof(msg)), "AWS.SimpleQueueService.NonExistentQueue");
	cr_assert(strstr(r.body, "<ErrorResponse"), "%s", r.body);
	free(r.body);

	snprintf(body, sizeof(body), "Action=DeleteMessage&Version=2012-11-05&ReceiptHandle=%s", "nope");
	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo", body);
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, receipt, sizeof(receipt)), "ReceiptHandleIsInvalid");
	free(r.body);

	r = fleet("&TargetCapacitySpecification.SpotTargetCapacity=1");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<lifecycle>spot</lifecycle><instanceIds>"), "%s", r.body);
	xml_nth(strstr(r.body, "<lifecycle>spot</lifecycle><instanceIds>"), "item", 0, id, sizeof(id));
	free(r.body);
	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"]}", id);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo",
		      "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10&WaitTimeSeconds=1");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(xml_nth(r.body, "Body", 0, msg, sizeof(msg)), "EC2 Spot Instance Interruption Warning"), "%s", r.body);
	xml_nth(r.body, "ReceiptHandle", 0, receipt, sizeof(receipt));
	free(r.body);
	snprintf(body, sizeof(body), "Action=DeleteMessage&Version=2012-11-05&ReceiptHandle=%s", receipt);
	r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo", body);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "<DeleteMessageResponse"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, pricing_get_products_lists_on_demand_prices)
{
	struct reply r = call_full(&(struct call){ .service = "pricing", .target = "AWSPriceListService.GetProducts" }, "/",
				   "{\"ServiceCode\":\"AmazonEC2\",\"FormatVersion\":\"aws_v1\",\"Filters\":["
				   "{\"Type\":\"TERM_MATCH\",\"Field\":\"regionCode\",\"Value\":\"eu-west-1\"},"
				   "{\"Type\":\"TERM_MATCH\",\"Field\":\"instanceType\",\"Value\":\"m5.large\"},"
				   "{\"Type\":\"TERM_MATCH\",\"Field\":\"operatingSystem\",\"Value\":\"Linux\"}]}");
	json_t *j, *p, *od, *term, *dim;
	const char *k1, *k2;

	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	cr_assert_eq(json_array_size(json_object_get(j, "PriceList")), 1, "%s", r.body);
	p = json_loads(json_string_value(json_array_get(json_object_get(j, "PriceList"), 0)), 0, NULL);
	cr_assert_not_null(p);
	od = json_object_get(json_object_get(p, "terms"), "OnDemand");
	json_object_foreach(od, k1, term)
		json_object_foreach(json_object_get(term, "priceDimensions"), k2, dim)
			cr_assert_float_eq(strtod(json_string_value(json_object_get(json_object_get(dim, "pricePerUnit"), "USD")), NULL),
					   0.096 * 1.1, 1e-9);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(p, "product"), "attributes"), "instanceType")), "m5.large");
	json_decref(p);
	json_decref(j);
	free(r.body);
}

Test(sim_aws, dry_run_answers_dry_run_operation_and_changes_nothing)
{
	struct reply r = ec2("Action=CreateLaunchTemplate&LaunchTemplateName=lt-dry&DryRun=true");
	char buf[64];

	cr_assert_eq(r.status, 412, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "DryRunOperation");
	free(r.body);
	r = ec2("Action=DescribeLaunchTemplates");
	cr_assert_eq(xml_count(r.body, "<launchTemplateId>"), 0, "%s", r.body);
	free(r.body);
}

Test(sim_aws, run_instances_launches_in_one_reservation_and_honours_ice)
{
	char params[1024], ami[64], buf[64];
	struct reply s, r;
	json_t *j;

	s = call_full(&(struct call){ .service = "ssm", .target = "AmazonSSM.GetParameter" }, "/",
		      "{\"Name\":\"/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id\"}");
	j = json_loads(s.body, 0, NULL);
	snprintf(ami, sizeof(ami), "%s", json_string_value(json_object_get(json_object_get(j, "Parameter"), "Value")));
	json_decref(j);
	free(s.body);
	snprintf(params, sizeof(params),
		 "Action=RunInstances&MinCount=1&MaxCount=2&InstanceType=t3.large&ImageId=%s"
		 "&Placement.AvailabilityZone=us-west-2c&InstanceMarketOptions.MarketType=spot", ami);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceId>"), 2, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<instanceLifecycle>spot</instanceLifecycle>"), 2, "%s", r.body);
	cr_assert(strstr(r.body, "<availabilityZone>us-west-2c</availabilityZone>"), "%s", r.body);
	free(r.body);

	s = admin("POST", "/_sim/faults", "{\"insufficientCapacity\":[{\"instanceType\":\"t3.large\"}]}");
	free(s.body);
	r = ec2(params);
	cr_assert_eq(r.status, 500, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "InsufficientInstanceCapacity");
	free(r.body);
}

static char *receive_all(void)
{
	struct reply r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo",
				   "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10");

	cr_assert_eq(r.status, 200, "%s", r.body);
	return r.body;
}

Test(sim_aws, rebalance_and_state_change_events_reach_the_queue)
{
	struct reply r;
	char id[64], json[256], params[128];
	char *msgs;

	create_template("lt-demo");
	launch_tagged("ev", id, sizeof(id));
	snprintf(json, sizeof(json), "{\"instanceIds\":[\"%s\"],\"kind\":\"rebalance-recommendation\"}", id);
	r = admin("POST", "/_sim/interrupt", json);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = admin("POST", "/_sim/faults", "{\"stateChangeEvents\": true}");
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	snprintf(params, sizeof(params), "Action=TerminateInstances&InstanceId.1=%s", id);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
	r = ec2("Action=DescribeInstances");
	free(r.body);
	msgs = receive_all();
	cr_assert(strstr(msgs, "EC2 Instance Rebalance Recommendation"), "%s", msgs);
	cr_assert(strstr(msgs, "EC2 Instance State-change Notification"), "%s", msgs);
	cr_assert(strstr(msgs, "&quot;state&quot;:&quot;shutting-down&quot;"), "%s", msgs);
	cr_assert(strstr(msgs, "&quot;state&quot;:&quot;terminated&quot;"), "%s", msgs);
	free(msgs);
}

Test(sim_aws, oversized_bodies_are_refused_with_413)
{
	size_t n = 2 * 1024 * 1024;
	char *big = malloc(n + 1);
	struct reply r;

	memset(big, 'a', n);
	memcpy(big, "Action=", 7);
	big[n] = '\0';
	r = call_full(&(struct call){ .service = "ec2" }, "/", big);
	cr_assert_eq(r.status, 413, "%s", r.body);
	free(r.body);
	free(big);
}

Test(sim_aws, spot_capacity_errors_use_the_injected_error_code)
{
	struct reply f, r;
	char buf[128];

	create_template("lt-demo");
	f = admin("POST", "/_sim/faults",
		  "{\"insufficientCapacity\":[{\"capacityType\":\"spot\",\"errorCode\":\"UnfulfillableCapacity\"}]}");
	cr_assert_eq(f.status, 200, "%s", f.body);
	free(f.body);
	r = fleet("&TargetCapacitySpecification.SpotTargetCapacity=1");
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(xml_count(r.body, "<errorCode>UnfulfillableCapacity</errorCode>"), 2, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "lifecycle", 0, buf, sizeof(buf)), "spot");
	cr_assert(strstr(r.body, "<fleetInstanceSet></fleetInstanceSet>"), "%s", r.body);
	free(r.body);
}

Test(sim_aws, requests_are_served_in_the_region_of_their_credential_scope)
{
	struct reply r = call_full(&(struct call){ .service = "ec2", .region = "eu-west-1" }, "/",
				   "Version=2016-11-15&Action=DescribeAvailabilityZones");
	char buf[64];

	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "zoneId", 0, buf, sizeof(buf)), "euw1-az1");
	free(r.body);
	r = call_full(&(struct call){ .service = "ec2", .region = "us-east-1" }, "/",
		      "Version=2016-11-15&Action=DescribeAvailabilityZones");
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_str_eq(xml_nth(r.body, "Code", 0, buf, sizeof(buf)), "AuthFailure");
	free(r.body);
}

/* 4,000 list entries (the sim's parameter ceiling is 4,096) stay cheap. */
Test(sim_aws, huge_parameter_lists_are_answered_quickly)
{
	size_t cap = 200000, len = 0;
	char *body = malloc(cap);
	struct timespec a, b;
	struct reply r;
	double ms;

	len += (size_t)snprintf(body + len, cap - len, "Version=2016-11-15&Action=DescribeSpotPriceHistory");
	for (int i = 1; i <= 1000; i++)
		len += (size_t)snprintf(body + len, cap - len, "&InstanceType.%d=m5.large&ProductDescription.%d=Linux%%2FUNIX"
					"&Filter.%d.Name=instance-type&Filter.%d.Value.1=m5.*", i, i, i, i);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = call_full(&(struct call){ .service = "ec2" }, "/", body);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	cr_assert_eq(r.status, 200, "%.300s", r.body);
	cr_assert_eq(xml_count(r.body, "<spotPrice>"), 3);
	cr_assert_lt(ms, 2000, "%f ms", ms);
	free(r.body);
	free(body);
}
