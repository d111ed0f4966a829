// Writes the protobuf schema of Kubernetes' built-in kinds, as flotilla transcodes its cached JSON
// to protobuf (src/api/protobuf-transcode.ts): read from the Go types' own struct tags, which are what the
// apiserver's JSON and protobuf encodings are both generated from. The .proto files alone do not
// say which fields JSON flattens (`json:",inline"`) or which fields Go always writes.
//
//	go run . > ../../src/api/protobuf-schema.generated.ts
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes/scheme"
)

// A field: [json name ("-": not in JSON; "": the value itself, a wrapped list's items), field
// number, kind, type index or map [key kind, value kind, value type], flags].
// Kinds: scalars by Go kind, "bytes", "msg", "map", and the types with their own encodings.
type field []any

type schema struct {
	Types [][]field      `json:"types"`
	Names []string       `json:"names"`
	Kinds map[string]int `json:"kinds"`
	index map[reflect.Type]int
}

var special = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":       "time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":  "microtime",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":   "duration",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":   "raw",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":    "raw",
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "quantity",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": "intorstring",
}

func typeName(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

func hasMarshal(t reflect.Type) bool {
	_, ok := reflect.PointerTo(t).MethodByName("Marshal")
	return ok
}

// valueKind is a value's kind and, for a message, its type's index.
func (s *schema) valueKind(t reflect.Type, wire string) (string, any) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k, ok := special[typeName(t)]; ok {
		return k, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return "msg", s.add(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes", nil
		}
		if t.Name() != "" && hasMarshal(t) {
			// A named list Go wraps in a message of its own: {repeated items = 1}.
			return "msg", s.addWrapped(t)
		}
		panic("slice value " + t.String())
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "bool", nil
	case reflect.Int32, reflect.Int, reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Float64, reflect.Float32:
		if wire == "zigzag32" || wire == "zigzag64" {
			panic("zigzag " + t.String())
		}
		return t.Kind().String(), nil
	}
	panic("value " + t.String())
}

func tagParts(tag string) (wire string, num int, rep, packed bool, ok bool) {
	if tag == "" {
		return "", 0, false, false, false
	}
	parts := strings.Split(tag, ",")
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		panic(tag)
	}
	for _, p := range parts[2:] {
		if p == "rep" {
			rep = true
		}
		if p == "packed" {
			packed = true
		}
	}
	return parts[0], n, rep, packed, true
}

// reserve is a type's index, and whether it is new (its fields still to be written); the index is
// taken before the fields are walked, so a type reached again through its own fields finds it.
func (s *schema) reserve(t reflect.Type) (int, bool) {
	if i, ok := s.index[t]; ok {
		return i, false
	}
	i := len(s.Types)
	s.index[t] = i
	s.Types = append(s.Types, nil)
	s.Names = append(s.Names, typeName(t))
	return i, true
}

func (s *schema) addWrapped(t reflect.Type) int {
	i, fresh := s.reserve(t)
	if !fresh {
		return i
	}
	k, ref := s.valueKind(t.Elem(), "bytes")
	s.Types[i] = []field{{"", 1, k, ref, "rep"}}
	return i
}

func (s *schema) add(t reflect.Type) int {
	i, fresh := s.reserve(t)
	if !fresh {
		return i
	}
	fields := []field{}
	for j := 0; j < t.NumField(); j++ {
		f := t.Field(j)
		wire, num, _, packed, ok := tagParts(f.Tag.Get("protobuf"))
		if !ok {
			continue // TypeMeta, and fields JSON has and protobuf does not
		}
		jsonTag := strings.Split(f.Tag.Get("json"), ",")
		name := jsonTag[0]
		var flags []string
		if name == "" && len(jsonTag) > 1 && jsonTag[1] == "inline" {
			flags = append(flags, "inline")
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			flags = append(flags, "ptr")
		}
		if packed {
			// Kubernetes' proto2 messages pack no repeated field; the transcoder writes none.
			panic("packed field " + t.String() + "." + f.Name)
		}
		var entry field
		switch {
		case ft.Kind() == reflect.Map:
			kk, _ := s.valueKind(ft.Key(), "bytes")
			valWire, _, _, _, _ := tagParts(f.Tag.Get("protobuf_val"))
			vk, vref := s.valueKind(ft.Elem(), valWire)
			entry = field{name, num, "map", []any{kk, vk, vref}, strings.Join(flags, " ")}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 && !(ft.Name() != "" && hasMarshal(ft)):
			// A Go slice is a repeated field whatever its tag says ("opt" on some).
			k, ref := s.valueKind(ft.Elem(), wire)
			entry = field{name, num, k, ref, strings.Join(append(flags, "rep"), " ")}
		default:
			k, ref := s.valueKind(ft, wire)
			entry = field{name, num, k, ref, strings.Join(flags, " ")}
		}
		fields = append(fields, entry)
	}
	sort.Slice(fields, func(a, b int) bool { return fields[a][1].(int) < fields[b][1].(int) })
	s.Types[i] = fields
	return i
}

func main() {
	s := &schema{Kinds: map[string]int{}, index: map[reflect.Type]int{}}
	gvks := scheme.Scheme.AllKnownTypes()
	keys := make([]string, 0, len(gvks))
	byKey := map[string]reflect.Type{}
	for gvk, t := range gvks {
		if gvk.Version == "__internal" {
			continue
		}
		if _, ok := t.FieldByName("TypeMeta"); !ok {
			continue
		}
		k := gvk.GroupVersion().String() + "/" + gvk.Kind
		keys = append(keys, k)
		byKey[k] = t
	}
	sort.Strings(keys)
	for _, k := range keys {
		t := byKey[k]
		func() {
			defer func() {
				if r := recover(); r != nil {
					fmt.Fprintf(os.Stderr, "skipped %s: %v\n", k, r)
				}
			}()
			s.Kinds[k] = s.add(t)
		}()
	}
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	fmt.Println("// Generated by scripts/protobuf-schema (go run . from there); do not edit.")
	fmt.Println("// Kubernetes v0.34.4's built-in kinds: what src/api/protobuf-transcode.ts reads.")
	fmt.Printf("export const SCHEMA_JSON = %s;\n", strconv.Quote(string(data)))
}
