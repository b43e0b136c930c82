// Command image assembles the container image of cpid-tui from binaries
// built beforehand (deploy/image/build.sh), without a Docker daemon and
// without pulling a base image: one layer on scratch holding the static
// binary, /etc/passwd and /etc/group with the user nonroot (65532), the CA
// bundle of the build machine (for a PostgreSQL server's certificate),
// /tmp and the working directory /var/lib/cpid.
//
// It writes an OCI image layout as a tar file (an index of one image per
// platform, tagged with the version: `skopeo copy oci-archive:` takes it,
// `crane push` the directory it holds) and, for each platform, a
// docker-archive tar (`docker load`, `kind load image-archive`).
//
//	go run . -bin linux/amd64=cpid-tui-amd64 -bin linux/arm64=cpid-tui-arm64 \
//	  -ca-certs /etc/ssl/certs/ca-certificates.crt -version v0.1.0 -revision $(git rev-parse HEAD) \
//	  -created $(git log -1 --format=%ct) -out dist/image
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as: distroless's nonroot, which
// deploy/deployment.yaml names too (runAsUser, fsGroup).
const (
	uid  = 65532
	user = "65532:65532"
)

// OCIFile is the tar of the OCI image layout; refName the annotation
// that tags its index (image-spec image-layout.md).
const (
	OCIFile   = "cpid-tui-oci.tar"
	refName   = "org.opencontainers.image.ref.name"
	imageName = "cpid-tui"
)

// binFlag is -bin PLATFORM=PATH, repeatable.
type binFlag map[string]string

func (b binFlag) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binFlag) Set(s string) error {
	p, path, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(p, "linux/") || path == "" {
		return fmt.Errorf("want linux/ARCH=PATH, got %q", s)
	}
	b[p] = path
	return nil
}

func main() {
	bins := binFlag{}
	flag.Var(bins, "bin", "a static cpid-tui for a platform: linux/ARCH=PATH (repeatable)")
	caCerts := flag.String("ca-certs", "", "the CA bundle (PEM) to install as /etc/ssl/certs/ca-certificates.crt")
	version := flag.String("version", "", "the version: label org.opencontainers.image.version and the image's tag")
	revision := flag.String("revision", "", "the commit: label org.opencontainers.image.revision")
	source := flag.String("source", "https://github.com/cpid-dev/cpid", "label org.opencontainers.image.source")
	created := flag.Int64("created", 0, "the image's creation time and its files' times, in Unix seconds (the commit's time, for a reproducible image)")
	out := flag.String("out", "dist/image", "the directory to write "+OCIFile+" and cpid-tui-linux-ARCH.tar into")
	flag.Parse()
	if err := build(bins, *caCerts, *version, *revision, *source, time.Unix(*created, 0).UTC(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// tagOf turns a version (git describe: v0.1.0-3-gabcdef-dirty) into a
// valid image tag.
func tagOf(version string) string {
	t := regexp.MustCompile(`[^A-Za-z0-9_.-]`).ReplaceAllString(version, "-")
	if t == "" || t[0] == '.' || t[0] == '-' {
		t = "v" + t
	}
	return t[:min(len(t), 128)]
}

func build(bins binFlag, caCerts, version, revision, source string, created time.Time, out string) error {
	switch {
	case len(bins) == 0:
		return errors.New("no -bin")
	case caCerts == "" || version == "" || revision == "":
		return errors.New("-ca-certs, -version and -revision are required")
	}
	ca, err := os.ReadFile(caCerts)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(imageName + ":" + tagOf(version))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       imageName,
		"org.opencontainers.image.description": "cpid-tui: kube-apiserver audit webhook receiver (cpid-tui serve) and change-propagation explorer",
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range slices.Sorted(maps.Keys(bins)) {
		arch := strings.TrimPrefix(platform, "linux/")
		bin, err := os.ReadFile(bins[platform])
		if err != nil {
			return err
		}
		img, err := image(arch, bin, ca, labels, created)
		if err != nil {
			return fmt.Errorf("%s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
		docker := filepath.Join(out, "cpid-tui-linux-"+arch+".tar")
		if err := tarball.WriteToFile(docker, tag, img); err != nil {
			return fmt.Errorf("write %s: %w", docker, err)
		}
		fmt.Printf("%s: %s\n", platform, docker)
	}

	dir, err := os.MkdirTemp(out, ".oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := l.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: tag.TagStr()})); err != nil {
		return err
	}
	oci := filepath.Join(out, OCIFile)
	if err := tarDir(dir, oci, created); err != nil {
		return err
	}
	d, _ := idx.Digest()
	fmt.Printf("%s: OCI image layout, index %s, tag %s\n", oci, d, tag.TagStr())
	return nil
}

// image is the image of one platform: scratch plus one layer.
func image(arch string, bin, ca []byte, labels map[string]string, created time.Time) (v1.Image, error) {
	layer, err := rootfs(bin, ca, created)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "deploy/image/build.sh", Comment: "cpid-tui, passwd, CA bundle"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: created}
	cf.Config = v1.Config{
		User:         user,
		Entrypoint:   []string{"/cpid-tui"},
		WorkingDir:   "/var/lib/cpid",
		Env:          []string{"TMPDIR=/tmp", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"9443/tcp": {}},
		Labels:       labels,
	}
	return mutate.ConfigFile(img, cf)
}

// rootfs is the layer's tar: every file and directory owned by root
// except the working directory, which the user owns.
func rootfs(bin, ca []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	dir := func(name string, mode int64, owner int) error {
		return w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	}
	nonroot := strconv.Itoa(uid)
	for _, step := range []func() error{
		func() error { return file("cpid-tui", 0o755, bin) },
		func() error { return dir("etc", 0o755, 0) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:"+nonroot+":"+nonroot+":nonroot:/var/lib/cpid:/sbin/nologin\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:"+nonroot+":\n")) },
		func() error { return dir("etc/ssl", 0o755, 0) },
		func() error { return dir("etc/ssl/certs", 0o755, 0) },
		func() error { return file("etc/ssl/certs/ca-certificates.crt", 0o644, ca) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir("var", 0o755, 0) },
		func() error { return dir("var/lib", 0o755, 0) },
		func() error { return dir("var/lib/cpid", 0o700, uid) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes the files under dir into the tar file out, in a fixed
// order and with the time given, so that the same image gives the same
// bytes.
func tarDir(dir, out string, mtime time.Time) error {
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	w := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return w.WriteHeader(h)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := w.WriteHeader(h); err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err == nil {
		err = w.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return os.Rename(tmp, out)
}
