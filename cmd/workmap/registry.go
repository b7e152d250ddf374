package main

import (
	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
)

// registry builds the definitions in effect: the embedded catalog, overridden by files.
func (o *options) registry() (*definitions.Registry, error) {
	reg := definitions.NewRegistry()
	builtin, err := catalog.Definitions()
	if err != nil {
		return nil, err
	}
	reg.Add(builtin...)
	if len(o.definitionDirs) > 0 {
		local, err := definitions.LoadFiles(o.definitionDirs...)
		if err != nil {
			return nil, err
		}
		reg.Add(local...)
	}
	return reg, nil
}
