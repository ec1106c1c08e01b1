"""Amazon S3 bucket names and s3:// URIs, checked once for every input that names a bucket
(--model-source s3://..., --stage s3://..., --s3-mount-bucket) by the rules of the S3 User Guide
("General purpose bucket naming rules"): 3 to 63 characters of lowercase letters, digits, dots
and hyphens, a letter or digit first and last, no two adjacent dots, not an IPv4 address, and
none of the prefixes and suffixes S3 reserves for its own names (access point aliases, Object
Lambda, Multi-Region Access Points, directory buckets). A name S3 would refuse fails here in one
line rather than as a pod that cannot read its model."""

from __future__ import annotations

import re

# The character, length-free part of the rules, as a pattern the chart's schema can hold too (no
# lookahead: RE2 and JSON Schema engines lack it): no two adjacent dots, alphanumeric at both ends.
BUCKET_CHARS = r"[a-z0-9]([a-z0-9-]|\.[a-z0-9-])*\.?[a-z0-9]"
BUCKET_PATTERN = rf"^{BUCKET_CHARS}$"
MIN_BUCKET, MAX_BUCKET = 3, 63
RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3")
_IPV4 = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$")


def bucket_problem(name: str) -> str | None:
    """Why S3 would refuse bucket `name`, or None when it is a valid general purpose bucket name."""
    if not MIN_BUCKET <= len(name) <= MAX_BUCKET:
        return f"a bucket name has {MIN_BUCKET} to {MAX_BUCKET} characters (this one {len(name)})"
    if not re.match(BUCKET_PATTERN, name):
        return ("a bucket name has only lowercase letters, digits, dots and hyphens, starts and ends with a "
                "letter or digit, and has no two adjacent dots")
    if _IPV4.match(name):
        return "a bucket name is not formatted as an IP address"
    reserved = [p for p in RESERVED_PREFIXES if name.startswith(p)] + [s for s in RESERVED_SUFFIXES if name.endswith(s)]
    if reserved:
        return f"a bucket name does not start or end with {reserved[0]} (reserved by S3)"
    return None


def s3_uri_problem(uri: str) -> str | None:
    """Why `uri` is not s3://BUCKET[/PREFIX] with a valid bucket and no blank in the key."""
    if not uri.startswith("s3://"):
        return "an S3 location is s3://BUCKET/PREFIX"
    bucket, _, key = uri[len("s3://"):].partition("/")
    if not bucket:
        return "an S3 location is s3://BUCKET/PREFIX, and this one has no bucket"
    if any(c.isspace() for c in key):
        return "an S3 key prefix has no blanks"
    problem = bucket_problem(bucket)
    return f"bucket {bucket!r}: {problem}" if problem else None
