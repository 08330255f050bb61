# data/: catalog and CRDs installed to $(pkgdatadir) (see data/README.md).
datacrdsdir = $(pkgdatadir)/crds
dist_pkgdata_DATA += data/instance-types.tsv data/instance-types.json data/README.md
dist_datacrds_DATA = \
	data/crds/karpenter.k8s.aws_awsnodetemplates.v1alpha1.yaml \
	data/crds/karpenter.k8s.aws_ec2nodeclasses.v1beta1.yaml \
	data/crds/karpenter.k8s.aws_ec2nodeclasses.yaml \
	data/crds/karpenter.sh_nodeclaims.yaml \
	data/crds/karpenter.sh_nodeoverlays.yaml \
	data/crds/karpenter.sh_nodepools.v1beta1.yaml \
	data/crds/karpenter.sh_nodepools.yaml \
	data/crds/karpenter.sh_provisioners.v1alpha5.yaml
