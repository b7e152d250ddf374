package grouper

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// OneBudget returns a copy of cfg whose clients all draw from one token bucket: cfg's own
// RateLimiter when it has one, else a new one of cfg.QPS and cfg.Burst. client-go gives every
// client made from a config without a RateLimiter a bucket of its own, so a process building
// several clients from one config would otherwise send several times the rate it was given.
// A config with a negative QPS (no client-side limit) is returned as it is.
func OneBudget(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter != nil || cfg.QPS < 0 {
		return cfg
	}
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	return cfg
}

// WithBudget returns a copy of cfg whose clients draw from limiter: the clients workmap-scheduler
// builds beside kube-scheduler's own share the budget of its scheduler client (the one that
// binds pods), sized by clientConnection.qps and burst. A nil limiter (a client without a
// limit) leaves the copy unlimited too.
func WithBudget(cfg *rest.Config, limiter flowcontrol.RateLimiter) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.RateLimiter = limiter
	if limiter == nil {
		cfg.QPS = -1
	}
	return cfg
}
