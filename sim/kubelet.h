/*
 * kanna-sim's kubelet-lite: joins the simulated EC2 instances (sim/aws.h)
 * to the Kubernetes side. A running instance registers (or adopts) its Node
 * after a boot delay and turns Ready; a terminated one's Node goes NotReady;
 * pods bound to a Ready node become Running and Ready. Runs as the
 * controllers' extra pass (k8s-controllers.h).
 */
#ifndef KANNA_SIM_KUBELET_H
#define KANNA_SIM_KUBELET_H

#include <stdint.h>

#include "sim/aws.h"
#include "sim/k8s-store.h"

/* An instance's Node turns Ready this long after launch by default. */
#define SIM_KUBELET_BOOT_MS_DEFAULT 3000

struct sim_kubelet;

int sim_kubelet_new(struct k8s_store *store, struct sim_aws *aws, unsigned boot_ms,
		    struct sim_kubelet **ret);
struct sim_kubelet *sim_kubelet_free(struct sim_kubelet *k);
/* One pass at wall-clock time now_ms; returns how many objects it wrote. */
int sim_kubelet_reconcile(struct sim_kubelet *k, uint64_t now_ms);
/* k8s_controller_fn adapter. */
void sim_kubelet_tick(void *userdata);

#endif
