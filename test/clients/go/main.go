// informer runs a client-go shared informer (or a metadata or dynamic informer: -mode) for pods in all namespaces
// through the given kubeconfig, prints "SYNCED" once its cache has synced, and on SIGTERM prints
// every cached pod as "<namespace>/<name> <uid> <resourceVersion> <cluster annotation>", one per
// line, the number of pod LIST and WATCH requests it made ("REQUESTS lists=N watches=M"), then
// "END".
//
// With -mode=patcher it is a small service-discovery controller: for every pod labelled
// discover=yes it merge-patches the annotation discovery.flotilla.io/cluster with the cluster
// the pod lives in (as flotilla's annotation says), through the same server it watches.
//
// With -mode=protobuf-writer it writes as client-go controllers do, in protobuf (its requests'
// bodies and first accepted answers): for every pod labelled pb=yes in -namespace it gets the pod,
// updates it with the resourceVersion it read, and patches it; then it creates a pod in the
// -create-in cluster, gets it at once, deletes it and lists again. A line per step ("UPDATED",
// "PATCHED", "CREATED", "GOT", "DELETED", "LISTED", or "ERROR <step> …"), then "END".
//
// With -mode=cbor-client it is client-go's dynamic client, which asks for CBOR first and (with the
// ClientsAllowCBOR and ClientsPreferCBOR gates on) sends CBOR: it creates a ConfigMap in -namespace
// twice ("CREATED <name>" or "ERROR create <status code> <reason>": a server without CBOR answers
// the first 415, and client-go sends the next in JSON), fills a dynamic informer of the
// namespace's ConfigMaps ("SYNCED <n>"), creates a third and waits for its watch to deliver it
// ("WATCHED <name>"), then "END". -v=8 logs each request's and answer's headers (client-go's own
// debug log), which say what was asked for and answered in.
//
// With -mode=informer-cost it measures what a client pays to fill an informer (issue 32: is serving
// protobuf reads worth it?): a pods shared informer in all namespaces, reading in the -content-type
// given (json or protobuf), and once synced one line "COST objects=<pods in its store> cpu_ms=<user
// and system CPU of the process from its start to the sync> alloc_mb=<bytes allocated by then>
// heap_mb=<live heap after a GC> lists=<n> watches=<n> list_bytes=<body bytes of its pod lists, as
// decoded (after any gzip)> gzipped_lists=<those the server sent gzipped>", then it exits 0.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the server to watch")
	klog.InitFlags(nil)
	mode := flag.String("mode", "informer", "informer, metadata, dynamic, patcher, protobuf-writer, cbor-client or informer-cost")
	resync := flag.Duration("resync", 5*time.Second, "informer resync period")
	selector := flag.String("selector", "", "label selector of the informer and metadata modes")
	namespace := flag.String("namespace", "", "the protobuf-writer mode's namespace")
	createIn := flag.String("create-in", "", "the cluster the protobuf-writer mode creates its pod in (by flotilla's annotation)")
	contentType := flag.String("content-type", "json", "what the informer-cost mode reads in: json or protobuf")
	accept := flag.String("accept", "", "the Accept header of the informer and metadata modes (client-go's AcceptContentTypes)")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	// What the client itself asked for: a watch-list informer that silently fell back to
	// LIST/WATCH (after a decode error, say) still syncs, but it lists.
	if *accept != "" {
		cfg.AcceptContentTypes = *accept
	}
	var lists, watches, listBytes, gzippedLists, protobufPods atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			isList := false
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
				if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
					watches.Add(1)
				} else {
					lists.Add(1)
					isList = true
				}
			}
			res, err := rt.RoundTrip(req)
			// What the server answered the pods' lists and watches in: asked for protobuf alone, a
			// client that got JSON would have failed, but one that got protobuf must show it.
			if err == nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") && strings.HasPrefix(res.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf") {
				protobufPods.Add(1)
			}
			if isList && err == nil && *mode == "informer-cost" {
				// The list's size each way, as the decoder reads it (after any gzip): the other
				// half of what protobuf would change.
				res.Body = &countingBody{ReadCloser: res.Body, n: &listBytes}
				// Inflating is part of the client's CPU, so whether it happened is part of the answer.
				if res.Uncompressed {
					gzippedLists.Add(1)
				}
			}
			return res, err
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if *mode == "protobuf-writer" {
		protobufWriter(ctx, cfg, *namespace, *createIn)
		return
	}
	if *mode == "cbor-client" {
		cborClient(ctx, cfg, *namespace)
		return
	}
	if *mode == "informer-cost" {
		informerCost(ctx, cfg, *contentType, &lists, &watches, &listBytes, &gzippedLists)
		return
	}

	var informer cache.SharedIndexInformer
	switch *mode {
	case "patcher":
		client := kubernetes.NewForConfigOrDie(cfg)
		factory := informers.NewSharedInformerFactoryWithOptions(client, *resync, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "discover=yes" }))
		informer = factory.Core().V1().Pods().Informer()
		patch := func(obj interface{}) {
			pod := obj.(*corev1.Pod)
			cluster := pod.Annotations["search.flotilla.io/cluster"]
			if cluster == "" || pod.Annotations["discovery.flotilla.io/cluster"] == cluster {
				return
			}
			body, _ := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]string{"discovery.flotilla.io/cluster": cluster}}})
			if _, err := client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
				fmt.Printf("PATCH-ERROR %s/%s %v\n", pod.Namespace, pod.Name, err)
				return
			}
			fmt.Printf("PATCHED %s/%s %s\n", pod.Namespace, pod.Name, cluster)
		}
		_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    patch,
			UpdateFunc: func(_, newObj interface{}) { patch(newObj) },
		})
	case "informer":
		client := kubernetes.NewForConfigOrDie(cfg)
		factory := informers.NewSharedInformerFactoryWithOptions(client, *resync, informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = *selector }))
		informer = factory.Core().V1().Pods().Informer()
	case "dynamic":
		client := dynamic.NewForConfigOrDie(cfg)
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, *resync, metav1.NamespaceAll, func(o *metav1.ListOptions) { o.LabelSelector = *selector })
		informer = factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
	case "metadata":
		client := metadata.NewForConfigOrDie(cfg)
		factory := metadatainformer.NewFilteredSharedInformerFactory(client, *resync, metav1.NamespaceAll, func(o *metav1.ListOptions) { o.LabelSelector = *selector })
		informer = factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Informer()
	default:
		fail(fmt.Errorf("unknown mode %q", *mode))
	}
	// Resyncs re-deliver the cache to handlers; counting them proves the informer ran them.
	resyncs := 0
	_, _ = informer.AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			if oldObj.(metav1.Object).GetResourceVersion() == newObj.(metav1.Object).GetResourceVersion() {
				resyncs++
			}
		},
	}, *resync)
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail(fmt.Errorf("cache never synced"))
	}
	fmt.Println("SYNCED")

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	var lines []string
	for _, obj := range informer.GetStore().List() {
		m := obj.(metav1.Object)
		lines = append(lines, fmt.Sprintf("%s/%s %s %s %s", m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion(), m.GetAnnotations()["search.flotilla.io/cluster"]))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Printf("RESYNCS %d\n", resyncs)
	fmt.Printf("REQUESTS lists=%d watches=%d protobuf=%d\n", lists.Load(), watches.Load(), protobufPods.Load())
	fmt.Println("END")
}

func protobufWriter(ctx context.Context, cfg *rest.Config, namespace, createIn string) {
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	// What the server answered in: a protobuf client that got JSON throughout proves nothing.
	var protobufAnswers atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			res, err := rt.RoundTrip(req)
			if err == nil && req.Method != http.MethodGet && strings.HasPrefix(res.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf") {
				protobufAnswers.Add(1)
			}
			return res, err
		})
	})
	client := kubernetes.NewForConfigOrDie(cfg)
	pods := client.CoreV1().Pods(namespace)
	fail := func(step string, err error) { fmt.Printf("ERROR %s %v\n", step, err) }
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "pb=yes"})
	if err != nil {
		fail("list", err)
	} else {
		for _, item := range list.Items {
			pod, err := pods.Get(ctx, item.Name, metav1.GetOptions{})
			if err != nil {
				fail("get "+item.Name, err)
				continue
			}
			pod.Labels["updated"] = "yes"
			updated, err := pods.Update(ctx, pod, metav1.UpdateOptions{})
			if err != nil {
				fail("update "+item.Name, err)
				continue
			}
			fmt.Printf("UPDATED %s %s %s\n", updated.Name, updated.Annotations["search.flotilla.io/cluster"], updated.ResourceVersion)
			patched, err := pods.Patch(ctx, item.Name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"pb-patched":"yes"}}}`), metav1.PatchOptions{})
			if err != nil {
				fail("patch "+item.Name, err)
				continue
			}
			fmt.Printf("PATCHED %s %s %s\n", patched.Name, patched.Annotations["search.flotilla.io/cluster"], patched.ResourceVersion)
		}
	}
	made := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pb-made-", Annotations: map[string]string{"search.flotilla.io/cluster": createIn}},
		// No scheduler serves it, so nothing changes it before its delete's RV precondition.
		Spec: corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "c", Image: "example.com/c:1"}}},
	}
	created, err := pods.Create(ctx, made, metav1.CreateOptions{})
	if err != nil {
		fail("create", err)
	} else {
		fmt.Printf("CREATED %s %s\n", created.Name, created.Annotations["search.flotilla.io/cluster"])
		if got, err := pods.Get(ctx, created.Name, metav1.GetOptions{}); err != nil {
			fail("get-created", err)
		} else {
			fmt.Printf("GOT %s %s\n", got.Name, got.Annotations["search.flotilla.io/cluster"])
		}
		zero := int64(0)
		if err := pods.Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{ResourceVersion: &created.ResourceVersion}}); err != nil {
			fail("delete", err)
		} else {
			fmt.Printf("DELETED %s\n", created.Name)
		}
		after, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			fail("list-after", err)
		} else {
			still := false
			for _, p := range after.Items {
				still = still || p.Name == created.Name
			}
			fmt.Printf("LISTED %s present=%v\n", created.Name, still)
		}
	}
	fmt.Printf("PROTOBUF-ANSWERS %d\n", protobufAnswers.Load())
	fmt.Println("END")
}

func cborClient(ctx context.Context, cfg *rest.Config, namespace string) {
	client := dynamic.NewForConfigOrDie(cfg)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	configMaps := client.Resource(gvr).Namespace(namespace)
	create := func() string {
		made, err := configMaps.Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"generateName": "cbor-"},
		}}, metav1.CreateOptions{})
		if err != nil {
			var code int32
			if status, ok := err.(apierrors.APIStatus); ok {
				code = status.Status().Code
			}
			fmt.Printf("ERROR create %d %s\n", code, apierrors.ReasonForError(err))
			return ""
		}
		fmt.Printf("CREATED %s\n", made.GetName())
		return made.GetName()
	}
	create()
	create()
	informer := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, namespace, nil).ForResource(gvr).Informer()
	added := make(chan string, 16)
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) { added <- obj.(metav1.Object).GetName() }})
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail(fmt.Errorf("cache never synced"))
	}
	fmt.Printf("SYNCED %d\n", len(informer.GetStore().ListKeys()))
	// One more, seen by the informer's watch.
	name := create()
	timeout := time.After(30 * time.Second)
	for name != "" {
		select {
		case got := <-added:
			if got == name {
				fmt.Printf("WATCHED %s\n", name)
				name = ""
			}
		case <-timeout:
			fail(fmt.Errorf("the watch never delivered %s", name))
		}
	}
	fmt.Println("END")
}

// informerCost fills a pods informer in one wire format and reports what that cost the process.
// Everything from the process's start counts (flag parsing, config, the list, decoding, the store):
// the constant part is the same both ways and small against thousands of pods.
func informerCost(ctx context.Context, cfg *rest.Config, contentType string, lists, watches, listBytes, gzippedLists *atomic.Int64) {
	switch contentType {
	case "protobuf":
		// As kube-controller-manager and most built-in controllers ask: protobuf, JSON when the
		// server has no protobuf for the type.
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	case "json":
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	default:
		fail(fmt.Errorf("unknown content type %q", contentType))
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	// No resync: a resync re-delivers the cache to handlers, work that does not depend on the format.
	informer := informers.NewSharedInformerFactory(client, 0).Core().V1().Pods().Informer()
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fail(fmt.Errorf("cache never synced"))
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail(err)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocated := ms.TotalAlloc
	// What the cache holds once the decoders' garbage is gone: the objects themselves.
	runtime.GC()
	runtime.ReadMemStats(&ms)
	const mb = 1 << 20
	fmt.Printf("COST objects=%d cpu_ms=%.1f alloc_mb=%.3f heap_mb=%.3f lists=%d watches=%d list_bytes=%d gzipped_lists=%d\n",
		len(informer.GetStore().ListKeys()), float64(cpu)/float64(time.Millisecond), float64(allocated)/mb, float64(ms.HeapAlloc)/mb,
		lists.Load(), watches.Load(), listBytes.Load(), gzippedLists.Load())
}

// countingBody adds the bytes read through it to n.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
