/*
 * The names of every socket between the kanna daemons, in one place (the
 * runtime directory holds <name>.sock): who binds, who connects, and what
 * flows over it. Messages themselves are in proto/proto.h.
 */
#ifndef KANNA_COMMON_ENDPOINTS_H
#define KANNA_COMMON_ENDPOINTS_H

/* watcher binds PUB; every replica connects SUB: state deltas, heartbeats. */
#define ENDPOINT_STATE_PUB "state.pub"
/* watcher binds ROUTER; replicas connect DEALER: snapshot requests/replies. */
#define ENDPOINT_STATE_SYNC "state.sync"
/* watcher binds PUSH "pending.<shard>"; scheduler shard <shard> connects PULL. */
#define ENDPOINT_PENDING_PREFIX "pending"
/* launcher binds PULL; schedulers (and the reaper) connect PUSH: launch plans. */
#define ENDPOINT_PLANS "plans"
/* launcher binds PUB; schedulers connect SUB: launch results, unavailable offerings. */
#define ENDPOINT_RESULTS "results"
/* reaper binds PUB; anyone may connect SUB: every disruption decision
 * (disruption_decision), which kanna-tap shows from the reaper's tap. */
#define ENDPOINT_DECISIONS "decisions"

/*
 * Who may connect to each (sock_admit(), issue 19): the roles whose
 * peer-identities a bound socket admits, besides root and the binding
 * daemon's own user. "operators" are the tap-group's members.
 */
#define ENDPOINT_STATE_PEERS "scheduler,launcher,reaper"
#define ENDPOINT_PENDING_PEERS "scheduler"
#define ENDPOINT_PLANS_PEERS "scheduler,reaper"
#define ENDPOINT_RESULTS_PEERS "scheduler"
#define ENDPOINT_DECISIONS_PEERS "operators"

#endif
