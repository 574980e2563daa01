"""Write Argo CD's route table, generated from Argo CD's own OpenAPI description.

``assets/swagger.json`` in github.com/argoproj/argo-cd is generated from the API server's
gRPC gateway definitions: every REST operation with its method, path and operation id. This
script reads it (the file ``TOOLPASS_ARGOCD_SWAGGER`` names; take it
with ``git show <commit>:assets/swagger.json`` from a clone; the commit and the repository's
VERSION are recorded) and maps each operation id to the RBAC check Argo CD's server makes for
it (server/*/*.go: ``enf.EnforceErr(claims, <resource>, <action>, <object>)``): an action of
``argocd/actions.json`` and the resource the engine checks. An operation this script does not
know stops it, so a new Argo CD operation is classified before the table is written.

Resources: ``app:{name}`` / ``appset:{name}`` / ``cluster:{id}`` / ``repo:{url}`` are read
live by the check (their project); ``@...`` markers are filled by ``ArgoCD.match_request``
from the request body (a new application, ApplicationSet, cluster, repository or project).
Flags: ``u`` for answers carrying cluster or repository content (logs, events, manifests,
live resources), ``a`` for requests about the agent's own session.

Run ``TOOLPASS_ARGOCD_SWAGGER=swagger.json python -m toolpass.integrations.argocd.generate``;
it writes ``routes.json`` beside this file, sorted.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from toolpass.integrations._generate.table import dump

OUT = Path(__file__).resolve().parents[5] / "core/src/toolpass/integrations/argocd/routes.json"
SOURCE = "argoproj/argo-cd assets/swagger.json at 37ee0097cf85 (VERSION 3.6.0, 2026-08-22)"
APP, APPS = "app:{name}", "*/*"

#: operation id -> (action, resource template, flags)
OPERATIONS: dict[str, tuple[str, str, str]] = {
    "AccountService_ListAccounts": ("accounts.get", "*", ""),
    "AccountService_CanI": ("session.read", "self", "a"),
    "AccountService_UpdatePassword": ("accounts.update", "@account-body", ""),
    "AccountService_GetAccount": ("accounts.get", "{name}", ""),
    "AccountService_CreateToken": ("accounts.update", "{name}", ""),
    "AccountService_DeleteToken": ("accounts.update", "{name}", ""),
    "ApplicationService_List": ("applications.get", APPS, ""),
    "ApplicationService_Watch": ("applications.get", APPS, ""),
    "ApplicationService_Create": ("applications.create", "@app-body", ""),
    "ApplicationService_GetManifestsWithFiles": ("applications.get", "@unresolved", "u"),
    "ApplicationService_ServerSideDiff": ("applications.get", "app:{appName}", "u"),
    "ApplicationService_Update": ("applications.update", "app:{application.metadata.name}", ""),
    "ApplicationService_ManagedResources": ("applications.get", "app:{applicationName}", "u"),
    "ApplicationService_ResourceTree": ("applications.get", "app:{applicationName}", ""),
    "ApplicationService_WatchResourceTree": ("applications.get", "app:{applicationName}", ""),
    "ApplicationService_Get": ("applications.get", APP, ""),
    "ApplicationService_Delete": ("applications.delete", APP, ""),
    "ApplicationService_Patch": ("applications.update", APP, ""),
    "ApplicationService_ListResourceEvents": ("applications.get", APP, "u"),
    "ApplicationService_ListLinks": ("applications.get", APP, ""),
    "ApplicationService_PodLogs2": ("logs.get", APP, "u"),
    "ApplicationService_PodLogs": ("logs.get", APP, "u"),
    "ApplicationService_GetManifests": ("applications.get", APP, "u"),
    "ApplicationService_TerminateOperation": ("applications.sync", APP, ""),
    "ApplicationService_GetResource": ("applications.get", APP, "u"),
    "ApplicationService_PatchResource": ("applications.update-resource", APP, ""),
    "ApplicationService_DeleteResource": ("applications.delete-resource", APP, ""),
    "ApplicationService_ListResourceActions": ("applications.get", APP, ""),
    "ApplicationService_RunResourceAction": ("applications.action", APP, ""),
    "ApplicationService_RunResourceActionV2": ("applications.action", APP, ""),
    "ApplicationService_ListResourceLinks": ("applications.get", APP, ""),
    "ApplicationService_RevisionChartDetails": ("applications.get", APP, ""),
    "ApplicationService_RevisionMetadata": ("applications.get", APP, "u"),
    "ApplicationService_GetOCIMetadata": ("applications.get", APP, ""),
    "ApplicationService_Rollback": ("applications.rollback", APP, ""),
    "ApplicationService_UpdateSpec": ("applications.update", APP, ""),
    "ApplicationService_Sync": ("applications.sync", APP, ""),
    "ApplicationService_GetApplicationSyncWindows": ("applications.get", APP, ""),
    "ApplicationSetService_List": ("applicationsets.get", APPS, ""),
    "ApplicationSetService_Watch": ("applicationsets.get", APPS, ""),
    "ApplicationSetService_Create": ("applicationsets.create", "@appset-body", ""),
    "ApplicationSetService_Generate": ("applicationsets.create", "@appset-generate", ""),
    "ApplicationSetService_Get": ("applicationsets.get", "appset:{name}", ""),
    "ApplicationSetService_Delete": ("applicationsets.delete", "appset:{name}", ""),
    "ApplicationSetService_ListResourceEvents": ("applicationsets.get", "appset:{name}", "u"),
    "ApplicationSetService_ResourceTree": ("applicationsets.get", "appset:{name}", ""),
    "CertificateService_ListCertificates": ("certificates.get", "*", ""),
    "CertificateService_CreateCertificate": ("certificates.create", "*", ""),
    "CertificateService_DeleteCertificate": ("certificates.delete", "*", ""),
    "ClusterService_List": ("clusters.get", "*", ""),
    "ClusterService_Create": ("clusters.create", "@cluster-body", ""),
    "ClusterService_Get": ("clusters.get", "cluster:{id.value}", ""),
    "ClusterService_Update": ("clusters.update", "cluster:{id.value}", ""),
    "ClusterService_Delete": ("clusters.delete", "cluster:{id.value}", ""),
    "ClusterService_InvalidateCache": ("clusters.update", "cluster:{id.value}", ""),
    "ClusterService_RotateAuth": ("clusters.update", "cluster:{id.value}", ""),
    "GPGKeyService_List": ("gpgkeys.get", "*", ""),
    "GPGKeyService_Create": ("gpgkeys.create", "*", ""),
    "GPGKeyService_Delete": ("gpgkeys.delete", "*", ""),
    "GPGKeyService_Get": ("gpgkeys.get", "*", ""),
    "NotificationService_ListServices": ("session.read", "self", "a"),
    "NotificationService_ListTemplates": ("session.read", "self", "a"),
    "NotificationService_ListTriggers": ("session.read", "self", "a"),
    "ProjectService_List": ("projects.get", "*", ""),
    "ProjectService_Create": ("projects.create", "@project-body", ""),
    "ProjectService_Get": ("projects.get", "{name}", ""),
    "ProjectService_Delete": ("projects.delete", "{name}", ""),
    "ProjectService_GetDetailedProject": ("projects.get", "{name}", ""),
    "ProjectService_ListEvents": ("projects.get", "{name}", "u"),
    "ProjectService_GetGlobalProjects": ("projects.get", "{name}", ""),
    "ProjectService_ListLinks": ("projects.get", "{name}", ""),
    "ProjectService_GetSyncWindowsState": ("projects.get", "{name}", ""),
    "ProjectService_Update": ("projects.update", "{project.metadata.name}", ""),
    "ProjectService_CreateToken": ("projects.update", "{project}", ""),
    "ProjectService_DeleteToken": ("projects.update", "{project}", ""),
    "RepoCredsService_ListRepositoryCredentials": ("repositories.get", "*", ""),
    "RepoCredsService_CreateRepositoryCredentials": ("repositories.create", "{body.url}", ""),
    "RepoCredsService_UpdateRepositoryCredentials": ("repositories.update", "{creds.url}", ""),
    "RepoCredsService_DeleteRepositoryCredentials": ("repositories.delete", "{url}", ""),
    "RepoCredsService_ListWriteRepositoryCredentials": ("write-repositories.get", "*", ""),
    "RepoCredsService_CreateWriteRepositoryCredentials": (
        "write-repositories.create",
        "{body.url}",
        "",
    ),
    "RepoCredsService_UpdateWriteRepositoryCredentials": (
        "write-repositories.update",
        "{creds.url}",
        "",
    ),
    "RepoCredsService_DeleteWriteRepositoryCredentials": (
        "write-repositories.delete",
        "{url}",
        "",
    ),
    "RepositoryService_ListRepositories": ("repositories.get", "*", ""),
    "RepositoryService_CreateRepository": ("repositories.create", "@repo-body", ""),
    "RepositoryService_UpdateRepository": ("repositories.update", "repo:{repo.repo}", ""),
    "RepositoryService_Get": ("repositories.get", "repo:{repo}", ""),
    "RepositoryService_DeleteRepository": ("repositories.delete", "repo:{repo}", ""),
    "RepositoryService_ListApps": ("repositories.get", "repo:{repo}", ""),
    "RepositoryService_GetHelmCharts": ("repositories.get", "repo:{repo}", ""),
    "RepositoryService_ListOCITags": ("repositories.get", "repo:{repo}", ""),
    "RepositoryService_ListRefs": ("repositories.get", "repo:{repo}", ""),
    "RepositoryService_ValidateAccess": ("repositories.create", "@unresolved", ""),
    "RepositoryService_GetAppDetails": ("repositories.get", "repo:{source.repoURL}", "u"),
    "RepositoryService_ListWriteRepositories": ("write-repositories.get", "*", ""),
    "RepositoryService_CreateWriteRepository": ("write-repositories.create", "@repo-body", ""),
    "RepositoryService_UpdateWriteRepository": (
        "write-repositories.update",
        "write-repo:{repo.repo}",
        "",
    ),
    "RepositoryService_GetWrite": ("write-repositories.get", "write-repo:{repo}", ""),
    "RepositoryService_DeleteWriteRepository": (
        "write-repositories.delete",
        "write-repo:{repo}",
        "",
    ),
    "RepositoryService_ValidateWriteAccess": ("write-repositories.create", "@unresolved", ""),
    "SessionService_Create": ("session.write", "self", "a"),
    "SessionService_Delete": ("session.write", "self", "a"),
    "SessionService_GetUserInfo": ("session.read", "self", "a"),
    "SettingsService_Get": ("session.read", "self", "a"),
    "SettingsService_GetPlugins": ("session.read", "self", "a"),
    "VersionService_Version": ("session.read", "self", "a"),
}


def build(swagger: dict[str, object] | None = None) -> dict[str, object]:
    if swagger is None:
        path = os.environ.get("TOOLPASS_ARGOCD_SWAGGER")
        if not path:
            raise SystemExit("set TOOLPASS_ARGOCD_SWAGGER to Argo CD's assets/swagger.json")
        swagger = json.loads(Path(path).read_text("utf-8"))
    paths = swagger["paths"]
    assert isinstance(paths, dict)
    rows = []
    for path, ops in paths.items():
        for method, op in ops.items():
            if method == "parameters":
                continue
            found = OPERATIONS.get(op["operationId"])
            if found is None:
                raise SystemExit(f"unclassified Argo CD operation {op['operationId']}")
            action, resource, flags = found
            m = method.upper()
            effect = "read" if m == "GET" else "destructive" if m == "DELETE" else "write"
            if action.startswith("session."):
                effect = "read" if m == "GET" else "write"
            rows.append([m, path, action, resource, effect, flags])
    rows.sort(key=lambda r: (r[1], r[0]))
    return {
        "source": f"{SOURCE}: {len(rows)} operations",
        "generator": "core/src/toolpass/integrations/argocd/generate.py",
        "routes": rows,
    }


if __name__ == "__main__":
    OUT.write_text(dump(build()), "utf-8")
    sys.stdout.write(f"wrote {OUT}\n")
