package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const (
	prismPkg    = "github.com/apache/beam/sdks/v2/go/cmd/prism"
	beamVersion = "v2.77.0"
)

// Build compiles every binary the run needs into workDir/bin, once per
// benchmark run; the Go build cache makes repeat runs quick. repoRoot is the
// beam-runner module, whose go.mod pins the Beam version the programs use.
func Build(repoRoot, workDir string, ws []Workload) error {
	bin := filepath.Join(workDir, "bin") + string(filepath.Separator)
	pkgs := []string{"./cmd/beam-runner"}
	for _, w := range ws {
		if w.Pkg != "" && !slices.Contains(pkgs, w.Pkg) { // wordcount-600 is wordcount's program
			pkgs = append(pkgs, w.Pkg)
		}
	}
	if err := goBuild(repoRoot, bin, pkgs...); err != nil {
		return err
	}
	return buildPrism(repoRoot, workDir, bin)
}

// buildPrism builds Prism as a separate binary to compare against; it is
// never linked into the runner. If our go.sum lacks a dependency of Prism's,
// it builds from a throwaway module in the work dir instead of touching ours.
func buildPrism(repoRoot, workDir, bin string) error {
	if err := goBuild(repoRoot, bin, prismPkg); err == nil {
		return nil
	}
	dir := filepath.Join(workDir, "prism-mod")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod := "module benchprism\n\ngo 1.24\n\nrequire github.com/apache/beam/sdks/v2 " + beamVersion + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := run(dir, "go", "mod", "download", "github.com/apache/beam/sdks/v2"); err != nil {
		return err
	}
	if err := run(dir, "go", "get", prismPkg+"@"+beamVersion); err != nil {
		return err
	}
	return goBuild(dir, bin, prismPkg)
}

// goBuild builds main packages into dir (ending in a separator, so go
// build names each binary after its package).
func goBuild(moduleDir, dir string, pkgs ...string) error {
	return run(moduleDir, "go", append([]string{"build", "-o", dir}, pkgs...)...)
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
