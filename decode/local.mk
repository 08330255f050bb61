# decode/: the Kubernetes JSON decoders (Pods, Nodes, NodePools and
# Provisioners, EC2NodeClasses and AWSNodeTemplates, storage, Namespaces)
# into proto structs. A library of its own: kanna-watcher decodes the API's
# objects with it and kanna-scheduler --simulate reads YAML dumps through
# it, so offline and live input decode alike.
noinst_LIBRARIES += libkanna-decode.a
libkanna_decode_a_SOURCES = \
	decode/decode.h decode/decode.c decode/decode-pod.c decode/decode-node.c \
	decode/decode-nodepool.c decode/decode-nodeclass.c decode/decode-storage.c \
	decode/decode-namespace.c decode/decode-nodeoverlay.c decode/decode-hash.c
