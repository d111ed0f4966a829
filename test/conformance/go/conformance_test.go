// Package conformance runs the upstream Kubernetes e2e tests of sig-api-machinery, sig-apps,
// sig-cli, sig-auth, sig-network, sig-instrumentation, sig-node, sig-scheduling and sig-storage
// against whatever --kubeconfig names: a test-fleet member directly, or flotilla in front
// of it. Nothing upstream is copied here: the tests, the e2e framework and the suite setup
// (RunE2ETests and its BeforeSuite) are imported from the k8s.io/kubernetes module; this file only
// chooses which test packages are linked in and parses the framework's flags, as the upstream
// e2e binary does for all of them.
package conformance

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"

	conformancetestdata "k8s.io/kubernetes/test/conformance/testdata"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// Freezes the feature constants the test packages label their specs with.
	_ "k8s.io/kubernetes/test/e2e/feature"

	// The test packages of the SIGs the harness judges flotilla by: their API tests run against
	// the test fleet (kwok runs no containers, so those waiting on one fail both ways).
	_ "k8s.io/kubernetes/test/e2e/apimachinery"
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/auth"
	_ "k8s.io/kubernetes/test/e2e/instrumentation"
	_ "k8s.io/kubernetes/test/e2e/kubectl"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/node"
	_ "k8s.io/kubernetes/test/e2e/scheduling"
	_ "k8s.io/kubernetes/test/e2e/storage"

	// The framework's optional parts that the upstream binary also links in (failure dumps,
	// metrics gathering, node checks), so the suite behaves as it does upstream.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/format"
)

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown arguments: %v\n", flag.CommandLine.Args())
		os.Exit(2)
	}
	// Manifests and fixtures some tests read (CRD examples, kubectl testdata) come from the
	// module's embedded copies, so the binary needs no checkout of the kubernetes repository.
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	testfiles.AddFileSource(conformancetestdata.GetConformanceTestdataFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

func TestConformance(t *testing.T) {
	e2e.RunE2ETests(t)
}
