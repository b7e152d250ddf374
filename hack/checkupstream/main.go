// Command checkupstream is `make check-upstream`: it checks every catalog definition against
// the CRDs of the operator releases pinned in hack/versions.mk (built into the control-plane
// folder by `make controlplane`), in every version the definition lists that the CRD serves,
// so an upstream field rename fails here instead of silently breaking a mapping. Fields the
// catalog reads that a pinned release does not have yet are listed, with the reason, in
// hack/upstream-ahead.yaml; nothing else may be missing. With -native it also starts the API
// server of each Kubernetes release the tests run, with native gangs on, and checks the fields
// of Kubernetes' own gang API that workmap writes and reads against the schemas it serves.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/workmap/workmap/definitions"
	"github.com/workmap/workmap/definitions/catalog"
	"github.com/workmap/workmap/definitions/crdschema"
	"github.com/workmap/workmap/definitions/paths"
	"github.com/workmap/workmap/e2e/harness"
	"github.com/workmap/workmap/internal/nativeapi"
)

// ahead is a field a definition reads that the pinned release does not have yet.
type ahead struct {
	Definition string `json:"definition"`
	Version    string `json:"version"`
	Field      string `json:"field"`
	Why        string `json:"why"`
}

func main() {
	bin := flag.String("bin", "", "the control-plane folder: <operator>/crds/*.yaml in it")
	aheadFile := flag.String("ahead", "hack/upstream-ahead.yaml", "fields newer than the pinned releases")
	require := flag.String("require", "", "comma-separated definitions that must have a CRD there")
	native := flag.Bool("native", false, "also check the native gang API's fields against the API server of each release the tests run (started from -bin and the folders beside it)")
	flag.Parse()
	err := run(*bin, *aheadFile, strings.Split(*require, ","))
	if *native {
		err = errors.Join(err, checkNative(*bin))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "check-upstream:", err)
		os.Exit(1)
	}
}

// checkNative starts each release's control plane with native gangs on and checks the native
// API's fields workmap uses against the schemas it serves.
func checkNative(bin string) error {
	if bin != "" {
		if err := os.Setenv(harness.EnvBinDir, bin); err != nil {
			return err
		}
	}
	var problems []error
	for _, r := range harness.Releases {
		p := &harness.Program{}
		err := p.Run(func() error {
			c := harness.Start(p, harness.Options{NativeGangs: true, Release: r, NoScheduler: true, Nodes: []harness.Node{}})
			v, served, found, err := nativeapi.Check(c.Kube.Discovery())
			switch {
			case err != nil:
				return err
			case !served:
				return fmt.Errorf("with native gangs on (%s) it serves none of the native PodGroup versions workmap knows", r.NativeGangGates)
			}
			for _, f := range found {
				problems = append(problems, fmt.Errorf("Kubernetes %s: %w", r.Version, f))
			}
			if len(found) == 0 {
				fmt.Printf("native gang API of Kubernetes %s: ok (%s/%s PodGroup, core/v1 Pod)\n", r.Version, nativeapi.Group, v.Name)
			}
			return nil
		})
		p.Teardown()
		if err != nil {
			problems = append(problems, fmt.Errorf("Kubernetes %s: %w", r.Version, err))
		}
	}
	return errors.Join(problems...)
}

func run(bin, aheadFile string, required []string) error {
	crds, err := readCRDs(filepath.Join(bin, "*", "crds", "*.yaml"))
	if err != nil {
		return err
	}
	data, err := os.ReadFile(aheadFile)
	if err != nil {
		return err
	}
	var aheads []ahead
	if err := yaml.UnmarshalStrict(data, &aheads); err != nil {
		return fmt.Errorf("%s: %w", aheadFile, err)
	}
	defs, err := catalog.Raw()
	if err != nil {
		return err
	}
	var problems []error
	checked := map[string]bool{}
	for _, d := range defs {
		crd := crds[d.Spec.Workload.Group+"/"+d.Spec.Workload.Kind]
		if crd == nil {
			fmt.Printf("%s: no CRD among the pinned operators' (not checked)\n", d.Name)
			continue
		}
		for _, a := range aheads {
			if a.Definition != d.Name {
				continue
			}
			p, err := paths.Parse(a.Field)
			var added *crdschema.CRD
			if err == nil {
				added, err = crd.WithField(a.Version, p)
			}
			if err != nil {
				problems = append(problems, fmt.Errorf("%s: %s lists %s %s: %w", d.Name, aheadFile, a.Version, a.Field, err))
				continue
			}
			crd = added
		}
		res, err := definitions.CheckAgainstCRD(d, crd)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		// Against the release it is pinned to, every field the catalog reads must exist.
		for _, w := range res.Warnings {
			problems = append(problems, fmt.Errorf("%s: %s", d.Name, w))
		}
		if len(res.Warnings) > 0 {
			continue
		}
		checked[d.Name] = true
		fmt.Printf("%s: ok against the pinned release's CRD, versions %s\n", d.Name, strings.Join(res.Checked, ", "))
	}
	for _, name := range required {
		if name != "" && !checked[name] {
			problems = append(problems, fmt.Errorf("%s was not checked against its operator's CRD", name))
		}
	}
	return errors.Join(problems...)
}

// readCRDs parses every CRD file matching pattern, keyed by group/kind.
func readCRDs(pattern string) (map[string]*crdschema.CRD, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD files match %s: run `make controlplane`", pattern)
	}
	return crdschema.ReadFiles(files)
}
