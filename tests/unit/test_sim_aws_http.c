/*
 * Helpers of the kanna-sim AWS tests (see test_sim_aws_http.h).
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sigv4.h"
#include "common/util.h"
#include "tests/unit/test_sim_aws_http.h"

struct sim_aws *aws;
char host[64];

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

void start(unsigned pending_ms, unsigned shutdown_ms)
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

void setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	start(0, 0);
}

void teardown(void)
{
	aws = sim_aws_free(aws);
}

struct reply call_full(const struct call *c, const char *path, const char *body)
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

struct reply ec2(const char *params)
{
	char body[8192];

	snprintf(body, sizeof(body), "Version=2016-11-15&%s", params);
	return call_full(&(struct call){ .service = "ec2" }, "/", body);
}

struct reply admin(const char *method, const char *path, const char *json)
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
const char *xml_nth(const char *body, const char *tag, int n, char *out, size_t len)
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

int xml_count(const char *body, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(body, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

void create_template(const char *name)
{
	char params[512];
	struct reply r;

	snprintf(params, sizeof(params), "Action=CreateLaunchTemplate&LaunchTemplateName=%s", name);
	r = ec2(params);
	cr_assert_eq(r.status, 200, "%s", r.body);
	free(r.body);
}

const char *subnet(char zone, char *out, size_t len)
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
struct reply fleet(const char *extra)
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

void launch_tagged(const char *pool, char *id, size_t len)
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

struct reply get_ec2(const char *query)
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

char *receive_all(void)
{
	struct reply r = call_full(&(struct call){ .service = "sqs" }, "/111122223333/demo",
				   "Action=ReceiveMessage&Version=2012-11-05&MaxNumberOfMessages=10");

	cr_assert_eq(r.status, 200, "%s", r.body);
	return r.body;
}
