"""A local stand-in for the AWS Price List Query API's GetProducts, which moto does not
implement: an HTTP server on 127.0.0.1 answering the JSON 1.1 call
(`X-Amz-Target: AWSPriceListService.GetProducts`) the way the real service shapes it: a
PriceList of JSON strings, each a product with its attributes and OnDemand terms. It matches
TERM_MATCH filters against each product's attributes, so a wrong filter finds nothing, as it
would on AWS. Prices are whatever the test puts in; they are not AWS's."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TARGET = "AWSPriceListService.GetProducts"


def product(instance: str, location: str, usd: float, date: str = "2026-11-01T00:00:00Z", **attributes: str) -> dict:
    """One AmazonEC2 on-demand product as GetProducts returns it (before JSON-encoding)."""
    attrs = {"instanceType": instance, "location": location, "operatingSystem": "Linux", "tenancy": "Shared",
             "preInstalledSw": "NA", "capacitystatus": "Used", "servicecode": "AmazonEC2", **attributes}
    sku = f"SKU{abs(hash((instance, location, tuple(sorted(attributes.items()))))) % 10**8:08d}"
    term = f"{sku}.JRTCKXETXF"
    return {"product": {"productFamily": "Compute Instance", "attributes": attrs, "sku": sku},
            "serviceCode": "AmazonEC2",
            "terms": {"OnDemand": {term: {"effectiveDate": date, "offerTermCode": "JRTCKXETXF", "sku": sku,
                                          "priceDimensions": {f"{term}.6YS6EN2CT7": {
                                              "unit": "Hrs", "pricePerUnit": {"USD": f"{usd:.10f}"},
                                              "description": f"${usd} per On Demand Linux {instance} Instance Hour"}}}}},
            "publicationDate": date}


class PricingStandIn:
    """`with PricingStandIn(products) as url:` serves GetProducts at url; `calls` records each
    request body; `fail_with` (an error code) answers every call with that error instead."""

    def __init__(self, products: list[dict], fail_with: str | None = None):
        self.products, self.fail_with, self.calls = products, fail_with, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                outer.calls.append({"target": self.headers.get("X-Amz-Target"), **body})
                if self.headers.get("X-Amz-Target") != TARGET:
                    return self._send(400, {"__type": "InvalidAction", "message": "only GetProducts"})
                if outer.fail_with:
                    return self._send(400, {"__type": outer.fail_with, "message": f"stand-in: {outer.fail_with}"})
                wanted = {f["Field"]: f["Value"] for f in body.get("Filters", []) if f.get("Type") == "TERM_MATCH"}
                hits = [p for p in outer.products if body.get("ServiceCode") == p["serviceCode"]
                        and all(p["product"]["attributes"].get(k) == v for k, v in wanted.items())]
                self._send(200, {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p) for p in hits]})

            def _send(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
