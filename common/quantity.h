/*
 * Kubernetes resource quantities ("500m", "1.5Gi", "2e3") as integers, the
 * way resource.Quantity's MilliValue()/Value() round them (up). Shared by
 * the watcher's decoders and the scheduler's loaders.
 */
#ifndef KANNA_COMMON_QUANTITY_H
#define KANNA_COMMON_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Scaled by 1000 when milli (cpu). -EINVAL on malformed, -ERANGE on overflow. */
int quantity_parse(const char *s, bool milli, int64_t *ret);
/*
 * A kubelet threshold: a quantity ("500Mi") or a percentage of capacity
 * ("5%", "12.5%", 0 to 100). Sets *percent to it, or to -1 and *ret to the
 * quantity (not negative). -EINVAL on anything else.
 */
int quantity_or_percent_parse(const char *s, int64_t *ret, double *percent);
/* "96", "1.5", "512Mi", "2Gi" */
void quantity_format(int64_t v, bool milli, bool binary, char *buf, size_t size);

#endif
