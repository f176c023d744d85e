/* SPDX-License-Identifier: MIT */
/* json-c helpers of oci.c and oci-sign.c: strict parsing of documents and descriptors. The
 * file also implements oci-desc.h (digest text, media types, freeing a descriptor). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "snapshot/oci-desc.h"

/* An OCI document (at most SNAP_OCI_DOC_MAX bytes) through the one strict parser,
 * common/json.h's json_parse_strict: 0 and *out, or -EFBIG, -EINVAL, -ENOMEM as it says. */
int oci_json_parse(const void *buf, size_t len, json_object **out);

/* Adds o under key to obj, or drops o: 0 or -ENOMEM. */
int oci_json_add(json_object *obj, const char *key, json_object *o);

/* The string under key when present: 0 and *out (malloc'd, or NULL when absent), -EINVAL when
 * it is not a string without NUL of at most max bytes. */
int oci_json_opt_string(json_object *obj, const char *key, size_t max, char **out);
/* The same for a media type (snap_oci_media_type_valid). */
int oci_json_opt_type(json_object *obj, const char *key, char **out);

/* The size under key: a JSON integer (not 4.0 or "4") from 0 to max. 0 and *out, or -EINVAL
 * (absent, not an integer, past max). */
int oci_json_size(json_object *obj, const char *key, uint64_t max, uint64_t *out);

/* Checks annotations is an object of strings (each at most SNAP_OCI_ANNOTATION_MAX bytes, no
 * NUL); when d is not NULL, fills the annotations a descriptor keeps (title, ref_name,
 * created, holders; malloc'd) that are present. 0, -EINVAL, -ENOMEM. */
int oci_json_check_annotations(json_object *ann, struct snap_oci_desc *d);

/* A descriptor object: mediaType, digest, size required; artifactType, annotations optional.
 * 0 and *d filled (strings malloc'd), or -EINVAL / -ENOMEM (d is cleared on failure). */
int oci_json_desc_parse(json_object *o, struct snap_oci_desc *d);

/* A new descriptor object for d (its annotations when set): 0 and *out,
 * -EINVAL (a bad media type or annotation), -ENOMEM. */
int oci_json_desc_new(const struct snap_oci_desc *d, json_object **out);
