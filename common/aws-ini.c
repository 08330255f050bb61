/*
 * The AWS shared config files (~/.aws/credentials and ~/.aws/config): their
 * paths after AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE, and a small
 * reader of their INI dialect ("[profile NAME]" sections in config, "[NAME]"
 * in credentials, "key = value", '#'/';' comments, indented nested
 * sub-properties ignored). Called by the credential chain and the region
 * lookup; reads files only, never writes them.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/aws-internal.h"

/* Longest profile name we match; AWS puts no limit, 256 is generous. */
#define AWS_PROFILE_NAME_MAX 256

int aws_shared_file_path(bool config_file, char **ret)
{
	const char *v = getenv(config_file ? "AWS_CONFIG_FILE" : "AWS_SHARED_CREDENTIALS_FILE");
	const char *home = getenv("HOME");

	if (v && *v) {
		if (strncmp(v, "~/", 2) == 0) {
			if (!home || !*home)
				return -ENOENT;
			return asprintf(ret, "%s/%s", home, v + 2) < 0 ? -ENOMEM : 0;
		}
		*ret = strdup(v);
		return *ret ? 0 : -ENOMEM;
	}
	if (!home || !*home)
		return -ENOENT;
	if (asprintf(ret, "%s/.aws/%s", home, config_file ? "config" : "credentials") < 0)
		return -ENOMEM;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Does section header text (between the brackets) name profile? */
static bool section_matches(const char *section, bool config_file, const char *profile)
{
	if (!config_file || streq(profile, "default")) {
		if (streq(section, profile))
			return true;
	}
	if (config_file) {
		if (strncmp(section, "profile", 7) == 0 && isspace((unsigned char)section[7])) {
			const char *name = section + 8;

			while (isspace((unsigned char)*name))
				name++;
			return streq(name, profile);
		}
	}
	return false;
}

int aws_ini_lookup(const char *path, bool config_file, const char *profile,
		   const char *key, char **ret, unsigned *ret_line)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	bool in_profile = false;
	FILE *f;
	int r = -ENOENT;

	if (!path || !profile || !key || strlen(profile) > AWS_PROFILE_NAME_MAX)
		return -EINVAL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *s, *eq;

		lineno++;
		if (isspace((unsigned char)line[0]) && line[0] != '\n' && line[0] != '\r' &&
		    *trim(line) != '\0')
			continue; /* nested sub-property or continuation */
		s = trim(line);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *close = strchr(s, ']');

			if (!close) {
				r = -EBADMSG;
				break;
			}
			*close = '\0';
			in_profile = section_matches(trim(s + 1), config_file, profile);
			continue;
		}
		eq = strchr(s, '=');
		if (!eq) {
			r = -EBADMSG;
			break;
		}
		*eq = '\0';
		if (in_profile && streq(trim(s), key)) {
			*ret = strdup(trim(eq + 1));
			r = *ret ? 0 : -ENOMEM;
			break;
		}
	}
	if (r == -EBADMSG && ret_line)
		*ret_line = lineno;
	fclose(f);
	return r;
}
