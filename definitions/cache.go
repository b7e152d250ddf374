package definitions

import (
	"encoding/json"
	"hash/fnv"
	"sync"

	"github.com/workmap/workmap/definitions/api/v1alpha1"
	"github.com/workmap/workmap/definitions/crdschema"
)

// Cache compiles each definition generation once. Watchers that see the same definition again
// (a resync, a status-only update) get the compiled value back without recompiling. Entries
// are keyed by name, generation and a hash of the spec, so a spec edited without a generation
// bump (files, the catalog) still recompiles. Safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[cacheKey]*Definition
}

type cacheKey struct {
	name       string
	generation int64
	specHash   uint64
	crd        *crdschema.CRD
	version    string
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{entries: map[cacheKey]*Definition{}} }

// Compile returns the compiled definition, compiling it on first use.
func (c *Cache) Compile(def *v1alpha1.WorkloadDefinition, opts CompileOptions) (*Definition, error) {
	raw, err := json.Marshal(def.Spec)
	if err != nil {
		return nil, err
	}
	h := fnv.New64a()
	_, _ = h.Write(raw)
	key := cacheKey{name: def.Name, generation: def.Generation, specHash: h.Sum64(), crd: opts.CRD, version: opts.Version}
	c.mu.Lock()
	d, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err = Compile(def, opts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries { // keep one compiled generation per definition name
		if k.name == key.name {
			delete(c.entries, k)
		}
	}
	c.entries[key] = d
	return d, nil
}

// Len returns the number of compiled definitions held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
