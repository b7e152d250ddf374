package main

import (
	"context"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/live"
)

// gangStates reads the live state of the workload's gangs; a failure to read them is a
// warning (the tree stands without them).
func (c *cluster) gangStates(ctx context.Context, r *live.Resolver, w *definitions.Workload, o live.GangOptions) {
	if err := r.GangStates(ctx, w, o); err != nil {
		c.warnf("%s %s/%s: reading its gangs' PodGroups: %v", w.Workload.Kind, w.Workload.Namespace, w.Workload.Name, c.explain(err))
	}
}
