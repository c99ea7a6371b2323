package sim

import (
	"errors"
	"fmt"
	"time"
)

// ConcurrencyLimit is a gateway's cap on the requests each replica holds
// (waiting or running in its engine), with a bounded queue at the gateway
// and a time-to-live there, as BLIS's admission and gateway queue and
// llm-d's flow control hold requests back while the pool is saturated. A
// request sent when no replica has a free slot (or while others already
// wait) waits at the gateway, first come first served; when a request
// ends at a replica, freeing its slot, the head of the queue is
// dispatched once that event is handled. A request that finds Queue
// requests waiting is refused at once (StatusQueueFull); one that waits
// TTL ends then (StatusExpired, Record.GatewayWait = TTL), and one whose
// client deadline (Config.Timeout) comes first ends timed out. A
// dispatched request goes to the replica the router chose, or if that
// replica is at the cap, to the next one with a free slot in index
// order (as a load balancer skips a host whose circuit breaker is open),
// so that no replica ever holds more than PerReplica. Record.GatewayWait
// is its wait; its TTFT and E2E count from its send, the wait included.
//
// The zero value (PerReplica 0) is no limit.
type ConcurrencyLimit struct {
	// PerReplica is the most requests a replica may hold; 0 means no
	// limit.
	PerReplica int
	// Queue is the most requests waiting at the gateway; 0 means none
	// waits: a request finding every slot taken is refused.
	Queue int
	// TTL is how long a request may wait at the gateway; 0 means until
	// a slot frees (or its client deadline).
	TTL time.Duration
}

// On reports whether the limit is set.
func (l ConcurrencyLimit) On() bool { return l.PerReplica != 0 }

// Validate refuses negative values, and a queue or TTL without a limit,
// naming the field.
func (l ConcurrencyLimit) Validate() error { return l.validate("ConcurrencyLimit") }

func (l ConcurrencyLimit) validate(field string) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+field+"."+format, a...)) }
	if l.PerReplica < 0 {
		bad("PerReplica must be >= 0 (0 means no limit), got %d", l.PerReplica)
	}
	if l.Queue < 0 {
		bad("Queue must be >= 0 (0 means no waiting room), got %d", l.Queue)
	}
	if l.TTL < 0 {
		bad("TTL must be >= 0 (0 means no expiry), got %v", l.TTL)
	}
	if l.TTL > MaxDuration {
		bad("TTL must be <= MaxDuration (%v), got %v", MaxDuration, l.TTL)
	}
	if l.PerReplica == 0 && (l.Queue != 0 || l.TTL != 0) {
		bad("Queue and TTL need a PerReplica limit (0 means no limit)")
	}
	return errors.Join(errs...)
}
