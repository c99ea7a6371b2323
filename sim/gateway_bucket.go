package sim

import (
	"errors"
	"fmt"
	"time"
)

// MinFillInterval is the shortest TokenBucket.FillInterval, Envoy's: its
// local rate limit refuses a fill timer under 50 ms ("local rate limit
// token bucket fill timer must be >= 50ms").
const MinFillInterval = 50 * time.Millisecond

// TokenBucket is a gateway's rate limit, as Envoy's local rate limit
// filter applies its token bucket (type.v3.TokenBucket: max_tokens,
// tokens_per_fill, fill_interval; envoyproxy/envoy,
// source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc
// at commit 016c0c8007133da7f1b1e22a1809f76fa40ae912, the timer-driven
// LocalRateLimiterImpl). The bucket starts full, with MaxTokens; a timer
// adds TokensPerFill at every FillInterval from the start of the run
// (at FillInterval, 2·FillInterval, …; before the arrivals of that
// instant), never above MaxTokens; each request sent takes one token, and
// a request that finds none is refused at once (Envoy answers 429):
// StatusThrottled. This mirrors the refill granularity of that timer,
// whole fills at fixed instants, not a continuous refill: over a
// FillInterval at most MaxTokens requests pass however they bunch, and in
// the long run at most TokensPerFill per FillInterval, the rate Rate.
//
// The zero value (FillInterval 0) is no bucket.
type TokenBucket struct {
	// MaxTokens is the bucket's size, the burst it admits, and what it
	// holds at the start (Envoy's max_tokens); at least 1 when set.
	MaxTokens int
	// TokensPerFill is the tokens each fill adds (tokens_per_fill); 0
	// means 1, as Envoy's default.
	TokensPerFill int
	// FillInterval is the time between fills (fill_interval), at least
	// MinFillInterval as Envoy requires; 0 means no bucket.
	FillInterval time.Duration
}

// On reports whether the bucket is set.
func (b TokenBucket) On() bool { return b.FillInterval != 0 }

// Rate is the bucket's long-run rate, requests per second:
// TokensPerFill / FillInterval (0 without a bucket).
func (b TokenBucket) Rate() float64 {
	if !b.On() {
		return 0
	}
	return float64(b.perFill()) / b.FillInterval.Seconds()
}

func (b TokenBucket) perFill() int {
	if b.TokensPerFill == 0 {
		return 1
	}
	return b.TokensPerFill
}

// Validate refuses a bucket Envoy would refuse, naming the field.
func (b TokenBucket) Validate() error { return b.validate("TokenBucket") }

func (b TokenBucket) validate(field string) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+field+"."+format, a...)) }
	if b.FillInterval < 0 {
		bad("FillInterval must be >= 0 (0 means no bucket), got %v", b.FillInterval)
	}
	if b.TokensPerFill < 0 {
		bad("TokensPerFill must be >= 0 (0 means 1), got %d", b.TokensPerFill)
	}
	if b.MaxTokens < 0 {
		bad("MaxTokens must be >= 0, got %d", b.MaxTokens)
	}
	if !b.On() {
		if b.MaxTokens != 0 || b.TokensPerFill != 0 {
			bad("FillInterval is 0 (no bucket), but MaxTokens or TokensPerFill is set: set FillInterval too")
		}
		return errors.Join(errs...)
	}
	if b.FillInterval > 0 && b.FillInterval < MinFillInterval {
		bad("FillInterval must be >= MinFillInterval (%v, Envoy's bound on its fill timer), got %v", MinFillInterval, b.FillInterval)
	}
	if b.FillInterval > MaxDuration {
		bad("FillInterval must be <= MaxDuration (%v), got %v", MaxDuration, b.FillInterval)
	}
	if b.MaxTokens == 0 {
		bad("MaxTokens must be >= 1 with a FillInterval: an empty bucket refuses every request")
	}
	return errors.Join(errs...)
}

// bucket is a run's token bucket: the tokens it holds and the fills
// counted into them (fills happen at fills·interval, counted lazily when
// a request reads the bucket).
type bucket struct {
	on               bool
	tokens, max, per int
	interval         time.Duration
	fills            int64
}

func newBucket(b TokenBucket) bucket {
	if !b.On() {
		return bucket{}
	}
	return bucket{on: true, tokens: b.MaxTokens, max: b.MaxTokens, per: b.perFill(), interval: b.FillInterval}
}

// take refills the bucket up to now and takes a token, reporting whether
// there was one. Capping at every fill equals capping once after them,
// since each fill only adds.
func (b *bucket) take(now time.Duration) bool {
	if due := int64(now / b.interval); due > b.fills {
		if gap := due - b.fills; gap >= int64(b.max) || b.per >= b.max {
			b.tokens = b.max // each fill adds at least one token
		} else {
			b.tokens = int(min(int64(b.max), int64(b.tokens)+gap*int64(b.per)))
		}
		b.fills = due
	}
	if b.tokens == 0 {
		return false
	}
	b.tokens--
	return true
}
