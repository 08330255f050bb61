/*
 * The Windows AMI families' user data (see userdata.h): Karpenter's
 * <powershell> block. Called by userdata_render(); pure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "launcher/userdata.h"

/* Windows: Karpenter's <powershell> block (aws/karpenter-provider-aws
 * pkg/providers/amifamily/bootstrap/windows.go): the user's script first,
 * then Start-EKSBootstrap.ps1 with the kubelet flags AL2 would pass. */
int windows_render(const struct userdata_options *o, char **ret)
{
	_cleanup_free_ char *buf = NULL, *labels = NULL, *args = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	r = userdata_node_labels_flag(o, &labels);
	if (r >= 0)
		r = userdata_kubelet_args(o, labels, &args);
	if (r < 0)
		return r;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fputs("<powershell>\n", f);
	if (o->custom && *o->custom)
		fprintf(f, "%s\n", o->custom);
	fputs("[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n", f);
	fprintf(f, "& $EKSBootstrapScriptFile -EKSClusterName '%s' -APIServerEndpoint '%s'", o->cluster_name,
		o->cluster_endpoint);
	if (o->cluster_ca)
		fprintf(f, " -Base64ClusterCA '%s'", o->cluster_ca);
	if (*args)
		fprintf(f, " -KubeletExtraArgs '%s'", args);
	if (o->cluster_dns)
		fprintf(f, " -DNSClusterIP '%s'", o->cluster_dns);
	fputs("\n</powershell>", f);
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}
