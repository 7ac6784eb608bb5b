"""The client follows the published contracts: its operation table is what the generator makes
from the hub's live /openapi.json, and every helper calls an operation that table holds."""

import importlib.util
import inspect
import json
import urllib.request
from pathlib import Path

from baton_client import _operations, client

PKG = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("generate_operations", PKG / "tools/generate_operations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_operation_table_is_generated_from_the_live_openapi_document(hub_url):
    with urllib.request.urlopen(hub_url + "/openapi.json") as res:
        document = json.loads(res.read())
    expected = _generator().generate(document)
    current = (PKG / "src/baton_client/_operations.py").read_text()
    assert current == expected, (
        "the hub's contracts changed: run tools/generate_operations.py on its /openapi.json"
    )


def test_every_helper_calls_a_published_operation_with_published_fields():
    called = set()
    for cls in (client.HandoffClient, client.BatonClient, client.Resources, client.Grants,
                client.Messages, client.Home, client.Hops, client.Compute):
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            source = inspect.getsource(fn)
            for op in _operations.OPERATIONS:
                if f'"{op}"' in source:
                    called.add(op)
    # Each feature the client serves has its operations reachable from a helper.
    for op in ("createHandoff", "readHandoff", "advanceHandoff", "waitHandoff", "createResource",
               "listResources", "readResource", "updateResource", "resourceHistory", "createGrant",
               "listGrants", "revokeGrant", "sendMessage", "listMessages", "ackMessage",
               "writeHomeFile", "readHomeFile", "listHomeFiles", "deleteHomeFile", "offerHandoff",
               "answerHandoff", "listHopInbox", "readHop", "readHopChain", "submitComputeJob",
               "listComputeJobs", "readComputeJob", "waitComputeJob", "cancelComputeJob", "me",
               "setMyLabel"):
        assert op in called, f"no helper calls {op}"


def test_a_field_the_contract_does_not_publish_is_refused_before_sending(agent):
    me = agent("strict")
    try:
        me.call("createResource", body={"namespace": "n", "kind": "k", "data": 1, "owner": "x"})
    except TypeError as error:
        assert "owner" in str(error)
    else:
        raise AssertionError("an unpublished field was sent")
