#!/usr/bin/env python3
"""Generate toolpass's AWS route table from botocore's service models.

    python -m toolpass.integrations.aws.generate --source botocore-1.44.8-py3-none-any.whl
    python -m toolpass.integrations.aws.generate    # pip download --no-deps botocore, then that

``--source`` is a botocore wheel, an unpacked wheel, or a ``botocore/data`` folder. The
output, ``core/src/toolpass/integrations/aws/routes.json.gz`` (``--out`` to change it), is
sorted and written byte-for-byte the same for the same input (gzip mtime 0).

Every operation of every service (the newest api-version of each) is one row::

    [method, path, action, resource, effect, flags, service, operation, conditions]

- ``service`` is botocore's service name (``s3``, ``sqs``); ``operation`` its operation name.
- ``method``/``path``: for REST protocols (rest-json, rest-xml) the operation's HTTP method
  and ``requestUri`` path in routes.py's template syntax (``{Bucket}``, ``{Key+}``); for the
  RPC protocols (query, ec2, json, smithy-rpc-v2-cbor) botocore's ``POST /``, and the
  operation is found by name (``Action=`` parameter, ``X-Amz-Target: <targetPrefix>.<Op>``,
  or ``/service/<targetPrefix>/operation/<Op>``).
- ``conditions`` (REST only): ``&``-joined tokens the query string and headers must carry
  for the row to apply, from the requestUri's query part (``/{Bucket}?uploads`` ->
  ``uploads``, ``?list-type=2`` -> ``list-type=2``) and, where several operations share a
  method and path, from their required query-string and header members (S3 ``UploadPart``:
  ``partNumber&uploadId``; ``CopyObject``: ``@x-amz-copy-source``). ``x-id`` is never a
  condition: S3 does not dispatch on it. ``+name`` marks a ``{name}`` inside the path that
  botocore declares greedy (``/portals/{portalArn+}/userSettings``: the ARN keeps its
  slashes), which routes.py allows only last.
- ``action`` is the IAM action ``<prefix>:<Action>``: the prefix is the service's SigV4
  signing name (``signingName`` or else ``endpointPrefix``) unless ``PREFIX`` below says
  otherwise; the action name is the operation name unless ``ACTIONS`` says otherwise.
- ``resource`` is a template filled by ``AWS.match_request``: ``{name}`` a path parameter,
  ``{query.x}``/``{body.x}`` a query/body field, ``{aws.partition}``, ``{aws.region}``
  (the request's signing region), ``{aws.account}`` (the connection's ``account_id``),
  ``{arn:<field>}`` a field only when it is already an ARN, ``{<svc>.<x>}`` a value
  aws.py computes (an SQS queue ARN from ``QueueUrl``, a KMS key ARN from ``KeyId``, ...);
  ``A|B`` tries A, then B. ``*`` where no resource can be built: the aws integration refuses
  ``*`` unless the connection sets ``allow_wildcard_resource``.
- ``effect``: read for Get/List/Describe/Head/... operations, destructive for
  Delete/Terminate/Remove/Revoke/Disable/Detach/... ones and for HTTP DELETE, write
  otherwise; never weaker than the effect aws.py declares for the action.
- ``flags``: ``u`` untrusted content in the answer, ``s`` sends data out (or makes it
  public), ``a`` about the agent itself; curated in ``FLAGS``.

The file also carries ``"services"``: per botocore service its signing name, endpoint
prefix, protocols, JSON target prefix and API version, so aws.py can build one service's
table on its first request.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from toolpass.integrations._generate.table import progress

ROOT = Path(__file__).resolve().parents[5]
OUT = ROOT / "core/src/toolpass/integrations/aws/routes.json.gz"
sys.path.insert(0, str(ROOT / "core/src"))

# --- IAM prefix where it is not the signing name (Service Authorization Reference,
# "service prefix: ..." of each service's page) ---------------------------------------
PREFIX = {
    "cloudwatch": "cloudwatch",  # signs as "monitoring"; SAR: Amazon CloudWatch, prefix cloudwatch
    "iot-data": "iot",  # signs as "iotdata"; SAR: iot:Publish, iot:GetThingShadow
    "iotsecuretunneling": "iot",  # signs as "IoTSecuredTunneling"; SAR: iot:OpenTunnel
    "iot-jobs-data": "iotjobsdata",  # SAR: AWS IoT Jobs DataPlane, prefix iotjobsdata
    "resourcegroupstaggingapi": "tag",  # signs as "tagging"; API ref: tag:GetResources
    "cloudcontrol": "cloudformation",  # SAR: AWS Cloud Control API, prefix cloudformation
    "mturk": "mechanicalturk",  # signs as "mturk-requester"; SAR prefix mechanicalturk
    "apigatewaymanagementapi": "execute-api",
}

# --- IAM action where it is not the operation name: "service:Operation" -> "prefix:Action"
# Sources: the Service Authorization Reference's "API operations" tables (S3, Lambda,
# Bedrock, Neptune), the S3 API reference's "Permissions" sections.
ACTIONS: dict[str, str] = {
    # S3 (list_amazons3: "API operations defined by Amazon S3")
    "s3:AbortMultipartUpload": "s3:AbortMultipartUpload",
    "s3:CompleteMultipartUpload": "s3:PutObject",
    "s3:CopyObject": "s3:PutObject",  # and s3:GetObject on the source (x-amz-copy-source)
    "s3:CreateMultipartUpload": "s3:PutObject",
    "s3:UploadPart": "s3:PutObject",
    "s3:UploadPartCopy": "s3:PutObject",
    "s3:HeadObject": "s3:GetObject",
    "s3:HeadBucket": "s3:ListBucket",
    "s3:ListObjects": "s3:ListBucket",
    "s3:ListObjectsV2": "s3:ListBucket",
    "s3:ListObjectVersions": "s3:ListBucketVersions",
    "s3:ListBuckets": "s3:ListAllMyBuckets",
    "s3:ListDirectoryBuckets": "s3express:ListAllMyDirectoryBuckets",
    "s3:CreateSession": "s3express:CreateSession",
    "s3:ListMultipartUploads": "s3:ListBucketMultipartUploads",
    "s3:ListParts": "s3:ListMultipartUploadParts",
    "s3:DeleteObjects": "s3:DeleteObject",
    "s3:SelectObjectContent": "s3:GetObject",
    "s3:GetObjectAttributes": "s3:GetObjectAttributes",
    "s3:WriteGetObjectResponse": "s3-object-lambda:WriteGetObjectResponse",
    "s3:GetBucketCors": "s3:GetBucketCORS",
    "s3:PutBucketCors": "s3:PutBucketCORS",
    "s3:DeleteBucketCors": "s3:PutBucketCORS",
    "s3:GetBucketLifecycle": "s3:GetLifecycleConfiguration",
    "s3:GetBucketLifecycleConfiguration": "s3:GetLifecycleConfiguration",
    "s3:PutBucketLifecycle": "s3:PutLifecycleConfiguration",
    "s3:PutBucketLifecycleConfiguration": "s3:PutLifecycleConfiguration",
    "s3:DeleteBucketLifecycle": "s3:PutLifecycleConfiguration",
    "s3:GetBucketEncryption": "s3:GetEncryptionConfiguration",
    "s3:PutBucketEncryption": "s3:PutEncryptionConfiguration",
    "s3:DeleteBucketEncryption": "s3:PutEncryptionConfiguration",
    "s3:GetBucketReplication": "s3:GetReplicationConfiguration",
    "s3:PutBucketReplication": "s3:PutReplicationConfiguration",
    "s3:DeleteBucketReplication": "s3:PutReplicationConfiguration",
    "s3:DeleteBucketTagging": "s3:PutBucketTagging",
    "s3:GetBucketNotification": "s3:GetBucketNotification",
    "s3:GetBucketNotificationConfiguration": "s3:GetBucketNotification",
    "s3:PutBucketNotification": "s3:PutBucketNotification",
    "s3:PutBucketNotificationConfiguration": "s3:PutBucketNotification",
    "s3:GetBucketAccelerateConfiguration": "s3:GetAccelerateConfiguration",
    "s3:PutBucketAccelerateConfiguration": "s3:PutAccelerateConfiguration",
    "s3:GetBucketAnalyticsConfiguration": "s3:GetAnalyticsConfiguration",
    "s3:ListBucketAnalyticsConfigurations": "s3:GetAnalyticsConfiguration",
    "s3:PutBucketAnalyticsConfiguration": "s3:PutAnalyticsConfiguration",
    "s3:DeleteBucketAnalyticsConfiguration": "s3:PutAnalyticsConfiguration",
    "s3:GetBucketInventoryConfiguration": "s3:GetInventoryConfiguration",
    "s3:ListBucketInventoryConfigurations": "s3:GetInventoryConfiguration",
    "s3:PutBucketInventoryConfiguration": "s3:PutInventoryConfiguration",
    "s3:DeleteBucketInventoryConfiguration": "s3:PutInventoryConfiguration",
    "s3:GetBucketMetricsConfiguration": "s3:GetMetricsConfiguration",
    "s3:ListBucketMetricsConfigurations": "s3:GetMetricsConfiguration",
    "s3:PutBucketMetricsConfiguration": "s3:PutMetricsConfiguration",
    "s3:DeleteBucketMetricsConfiguration": "s3:PutMetricsConfiguration",
    "s3:GetBucketIntelligentTieringConfiguration": "s3:GetIntelligentTieringConfiguration",
    "s3:ListBucketIntelligentTieringConfigurations": "s3:GetIntelligentTieringConfiguration",
    "s3:PutBucketIntelligentTieringConfiguration": "s3:PutIntelligentTieringConfiguration",
    "s3:DeleteBucketIntelligentTieringConfiguration": "s3:PutIntelligentTieringConfiguration",
    "s3:DeleteBucketOwnershipControls": "s3:PutBucketOwnershipControls",
    "s3:GetObjectLockConfiguration": "s3:GetBucketObjectLockConfiguration",
    "s3:PutObjectLockConfiguration": "s3:PutBucketObjectLockConfiguration",
    "s3:GetPublicAccessBlock": "s3:GetBucketPublicAccessBlock",
    "s3:PutPublicAccessBlock": "s3:PutBucketPublicAccessBlock",
    "s3:DeletePublicAccessBlock": "s3:PutBucketPublicAccessBlock",
    "s3control:GetPublicAccessBlock": "s3:GetAccountPublicAccessBlock",
    "s3control:PutPublicAccessBlock": "s3:PutAccountPublicAccessBlock",
    "s3control:DeletePublicAccessBlock": "s3:PutAccountPublicAccessBlock",
    # Lambda (list_awslambda: Invoke and InvokeWithResponseStream authorize InvokeFunction)
    "lambda:Invoke": "lambda:InvokeFunction",
    "lambda:InvokeWithResponseStream": "lambda:InvokeFunction",
    # SQS / SNS batch operations are authorized by the single-message action
    "sqs:SendMessageBatch": "sqs:SendMessage",
    "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
    "sns:PublishBatch": "sns:Publish",
    # DynamoDB: transactions are authorized per item; PartiQL by statement kind (aws.py
    # narrows ExecuteStatement & co. by the statement's verb; the table keeps the strongest)
    "dynamodb:TransactGetItems": "dynamodb:GetItem",
    "dynamodb:TransactWriteItems": "dynamodb:DeleteItem",
    "dynamodb:ExecuteStatement": "dynamodb:PartiQLDelete",
    "dynamodb:BatchExecuteStatement": "dynamodb:PartiQLDelete",
    "dynamodb:ExecuteTransaction": "dynamodb:PartiQLDelete",
    # Bedrock runtime (Converse is authorized by InvokeModel)
    "bedrock-runtime:Converse": "bedrock:InvokeModel",
    "bedrock-runtime:ConverseStream": "bedrock:InvokeModelWithResponseStream",
    # Neptune data API (neptune/userguide/iam-dp-actions): a query may read, write or delete;
    # the strongest is kept, explain/profile only read.
    "neptunedata:ExecuteGremlinQuery": "neptune-db:DeleteDataViaQuery",
    "neptunedata:ExecuteOpenCypherQuery": "neptune-db:DeleteDataViaQuery",
    "neptunedata:ExecuteGremlinExplainQuery": "neptune-db:ReadDataViaQuery",
    "neptunedata:ExecuteGremlinProfileQuery": "neptune-db:ReadDataViaQuery",
    "neptunedata:ExecuteOpenCypherExplainQuery": "neptune-db:ReadDataViaQuery",
    "neptunedata:CancelGremlinQuery": "neptune-db:CancelQuery",
    "neptunedata:CancelOpenCypherQuery": "neptune-db:CancelQuery",
    "neptunedata:GetGremlinQueryStatus": "neptune-db:GetQueryStatus",
    "neptunedata:GetOpenCypherQueryStatus": "neptune-db:GetQueryStatus",
    "neptunedata:ListGremlinQueries": "neptune-db:GetQueryStatus",
    "neptunedata:ListOpenCypherQueries": "neptune-db:GetQueryStatus",
    "neptune-graph:ExecuteQuery": "neptune-graph:DeleteDataViaQuery",
    "neptune-graph:GetQuery": "neptune-graph:GetQueryStatus",
    # The WebSocket management API is authorized as one action (API Gateway developer guide)
    "apigatewaymanagementapi:PostToConnection": "execute-api:ManageConnections",
    "apigatewaymanagementapi:GetConnection": "execute-api:ManageConnections",
    "apigatewaymanagementapi:DeleteConnection": "execute-api:ManageConnections",
    # CloudSearch domain actions are lower-case (list_amazoncloudsearch)
    "cloudsearchdomain:Search": "cloudsearch:search",
    "cloudsearchdomain:Suggest": "cloudsearch:suggest",
    "cloudsearchdomain:UploadDocuments": "cloudsearch:document",
}

# S3 on Outposts buckets managed through s3control are s3-outposts actions.
for _op, _act in {
    "CreateBucket": "CreateBucket",
    "DeleteBucket": "DeleteBucket",
    "GetBucket": "GetBucket",
    "ListRegionalBuckets": "ListRegionalBuckets",
    "GetBucketLifecycleConfiguration": "GetLifecycleConfiguration",
    "PutBucketLifecycleConfiguration": "PutLifecycleConfiguration",
    "DeleteBucketLifecycleConfiguration": "PutLifecycleConfiguration",
    "GetBucketPolicy": "GetBucketPolicy",
    "PutBucketPolicy": "PutBucketPolicy",
    "DeleteBucketPolicy": "DeleteBucketPolicy",
    "GetBucketTagging": "GetBucketTagging",
    "PutBucketTagging": "PutBucketTagging",
    "DeleteBucketTagging": "PutBucketTagging",
    "GetBucketVersioning": "GetBucketVersioning",
    "PutBucketVersioning": "PutBucketVersioning",
    "GetBucketReplication": "GetReplicationConfiguration",
    "PutBucketReplication": "PutReplicationConfiguration",
    "DeleteBucketReplication": "PutReplicationConfiguration",
}.items():
    ACTIONS[f"s3control:{_op}"] = f"s3-outposts:{_act}"

# --- Effects: the first word of the operation name decides ------------------------------
READ_VERBS = {
    "Get", "List", "Describe", "Head", "Search", "Select", "Query", "Scan", "Lookup",
    "View", "Preview", "Filter", "Simulate", "Validate", "Estimate", "Receive",
}  # fmt: skip
DESTRUCTIVE_VERBS = {
    "Delete", "Terminate", "Remove", "Revoke", "Disable", "Detach", "Deregister",
    "Disassociate", "Purge", "Destroy", "Drop", "Untag", "Cancel", "Abort", "Release",
    "Reject", "Deactivate", "Unassign", "Unlink", "Unsubscribe", "Erase", "Close",
    "Deprovision", "Decommission", "Unregister", "Leave", "Clear", "Flush", "Discard",
    "Wipe", "Expire", "Reset", "Uninstall", "Unshare", "Withdraw", "Evict", "Retire",
    "Forget", "Unpeer", "Unarchive", "Rollback", "Shutdown", "Kill",
}  # fmt: skip
# Reads by name that mint credentials or tokens: writes.
EFFECTS = {
    "sts:GetSessionToken": "write",
    "sts:GetFederationToken": "write",
    "redshift:GetClusterCredentials": "write",
    "redshift:GetClusterCredentialsWithIAM": "write",
    "redshift-serverless:GetCredentials": "write",
    "cognito-identity:GetId": "write",
    "cognito-identity:GetCredentialsForIdentity": "write",
    "cognito-identity:GetOpenIdToken": "write",
    "cognito-identity:GetOpenIdTokenForDeveloperIdentity": "write",
    "sso:GetRoleCredentials": "write",
    "ecr:GetAuthorizationToken": "write",
    "ecr-public:GetAuthorizationToken": "write",
    "codeartifact:GetAuthorizationToken": "write",
    "rds-data:ExecuteStatement": "write",
    "rds-data:BatchExecuteStatement": "write",
    "redshift-data:ExecuteStatement": "write",
    "redshift-data:BatchExecuteStatement": "write",
    "athena:StartQueryExecution": "write",
    # a statement the request does not show as a read may delete: the strongest until
    # aws.py reads the statement's verb
    "dynamodb:ExecuteStatement": "destructive",
    "dynamodb:BatchExecuteStatement": "destructive",
    "dynamodb:ExecuteTransaction": "destructive",
}

# --- Flags: "service:Operation" -> u (untrusted answer), s (sends out), a (the agent) ---
FLAGS = {
    # answers carrying content others wrote
    "s3:GetObject": "u",
    "s3:SelectObjectContent": "u",
    "s3:GetObjectTorrent": "u",
    "sqs:ReceiveMessage": "u",
    "logs:GetLogEvents": "u",
    "logs:FilterLogEvents": "u",
    "logs:GetQueryResults": "u",
    "logs:StartLiveTail": "u",
    "logs:GetLogRecord": "u",
    "dynamodb:GetItem": "u",
    "dynamodb:BatchGetItem": "u",
    "dynamodb:Query": "u",
    "dynamodb:Scan": "u",
    "dynamodb:TransactGetItems": "u",
    "dynamodb:ExecuteStatement": "u",
    "dynamodb:BatchExecuteStatement": "u",
    "dynamodb:ExecuteTransaction": "u",
    "dynamodbstreams:GetRecords": "u",
    "kinesis:GetRecords": "u",
    "kinesis:SubscribeToShard": "u",
    "mediastore-data:GetObject": "u",
    "athena:GetQueryResults": "u",
    "redshift-data:GetStatementResult": "u",
    "redshift-data:GetStatementResultV2": "u",
    "rds-data:ExecuteStatement": "u",
    "rds-data:BatchExecuteStatement": "u",
    "cloudtrail:LookupEvents": "u",
    "ssm:GetCommandInvocation": "u",
    "codecommit:GetFile": "u",
    "codecommit:GetBlob": "u",
    "codecommit:GetDifferences": "u",
    "codecommit:GetComment": "u",
    "codecommit:GetCommentsForPullRequest": "u",
    "codecommit:GetCommentsForComparedCommit": "u",
    "codecommit:GetPullRequest": "u",
    "codecommit:GetCommit": "u",
    "bedrock-runtime:InvokeModel": "u",
    "bedrock-runtime:InvokeModelWithResponseStream": "u",
    "bedrock-runtime:Converse": "u",
    "bedrock-runtime:ConverseStream": "u",
    "bedrock-agent-runtime:InvokeAgent": "u",
    "bedrock-agent-runtime:Retrieve": "u",
    "bedrock-agent-runtime:RetrieveAndGenerate": "u",
    "sagemaker-runtime:InvokeEndpoint": "u",
    "sagemaker-runtime:InvokeEndpointWithResponseStream": "u",
    "sagemaker-runtime:InvokeEndpointAsync": "u",
    "neptunedata:ExecuteGremlinQuery": "u",
    "neptunedata:ExecuteOpenCypherQuery": "u",
    "neptune-graph:ExecuteQuery": "u",
    "timestream-query:Query": "u",
    "cloudsearchdomain:Search": "u",
    "kendra:Query": "u",
    "kendra:Retrieve": "u",
    "workmailmessageflow:GetRawMessageContent": "u",
    "connect:GetContactAttributes": "u",
    "qbusiness:ChatSync": "u",
    "iot-data:GetThingShadow": "u",
    "iot-data:GetRetainedMessage": "u",
    "textract:GetDocumentTextDetection": "u",
    "textract:AnalyzeDocument": "u",
    "textract:DetectDocumentText": "u",
    "transcribe:GetTranscriptionJob": "u",
    # code that runs with the payload: its answer is untrusted, and it may send data on
    "lambda:Invoke": "us",
    "lambda:InvokeWithResponseStream": "us",
    "lambda:InvokeAsync": "s",
    # sending messages, email, SMS, notifications to people or other systems
    "ses:SendEmail": "s",
    "ses:SendRawEmail": "s",
    "ses:SendTemplatedEmail": "s",
    "ses:SendBulkTemplatedEmail": "s",
    "ses:SendBounce": "s",
    "ses:SendCustomVerificationEmail": "s",
    "sesv2:SendEmail": "s",
    "sesv2:SendBulkEmail": "s",
    "sesv2:SendCustomVerificationEmail": "s",
    "pinpoint-email:SendEmail": "s",
    "sns:Publish": "s",
    "sns:PublishBatch": "s",
    "sns:Subscribe": "s",
    "sqs:SendMessage": "s",
    "sqs:SendMessageBatch": "s",
    "pinpoint:SendMessages": "s",
    "pinpoint:SendUsersMessages": "s",
    "pinpoint:SendOTPMessage": "s",
    "pinpoint-sms-voice:SendVoiceMessage": "s",
    "pinpoint-sms-voice-v2:SendTextMessage": "s",
    "pinpoint-sms-voice-v2:SendVoiceMessage": "s",
    "pinpoint-sms-voice-v2:SendMediaMessage": "s",
    "pinpoint-sms-voice-v2:SendDestinationNumberVerificationCode": "s",
    "socialmessaging:SendWhatsAppMessage": "s",
    "connect:StartOutboundVoiceContact": "s",
    "connect:StartOutboundChatContact": "s",
    "connect:StartOutboundEmailContact": "s",
    "connect:SendOutboundEmail": "s",
    "chime-sdk-messaging:SendChannelMessage": "s",
    "apigatewaymanagementapi:PostToConnection": "s",
    "iot-data:Publish": "s",
    "events:PutEvents": "s",
    "eventbridgev2:PutEvents": "s",
    "firehose:PutRecord": "s",
    "firehose:PutRecordBatch": "s",
    # making data public or sharing it with other accounts
    "s3:PutBucketPolicy": "s",
    "s3:PutBucketAcl": "s",
    "s3:PutObjectAcl": "s",
    "s3:PutPublicAccessBlock": "s",
    "s3:DeletePublicAccessBlock": "s",
    "s3:PutBucketWebsite": "s",
    "s3:PutBucketReplication": "s",
    "s3control:PutPublicAccessBlock": "s",
    "s3control:DeletePublicAccessBlock": "s",
    "s3control:PutAccessPointPolicy": "s",
    "s3control:PutMultiRegionAccessPointPolicy": "s",
    "lambda:AddPermission": "s",
    "lambda:AddLayerVersionPermission": "s",
    "lambda:CreateFunctionUrlConfig": "s",
    "lambda:UpdateFunctionUrlConfig": "s",
    "sqs:AddPermission": "s",
    "sqs:SetQueueAttributes": "s",
    "sns:AddPermission": "s",
    "sns:SetTopicAttributes": "s",
    "kms:PutKeyPolicy": "s",
    "kms:CreateGrant": "s",
    "secretsmanager:PutResourcePolicy": "s",
    "ecr:SetRepositoryPolicy": "s",
    "ec2:ModifySnapshotAttribute": "s",
    "ec2:ModifyImageAttribute": "s",
    "ec2:ModifyFpgaImageAttribute": "s",
    "rds:ModifyDBSnapshotAttribute": "s",
    "rds:ModifyDBClusterSnapshotAttribute": "s",
    "ram:CreateResourceShare": "s",
    "ram:AssociateResourceShare": "s",
    "glacier:SetVaultAccessPolicy": "s",
    "iam:CreateAccessKey": "s",
    "iam:CreateLoginProfile": "s",
    "iam:UpdateAssumeRolePolicy": "s",
    "events:PutPermission": "s",
    "logs:PutResourcePolicy": "s",
    "logs:PutSubscriptionFilter": "s",
    "logs:CreateExportTask": "s",
    "backup:PutBackupVaultAccessPolicy": "s",
    "efs:PutFileSystemPolicy": "s",
    "dynamodb:PutResourcePolicy": "s",
    "ecr:PutRegistryPolicy": "s",
    # about the agent itself
    "sts:GetCallerIdentity": "a",
}

# --- Resources --------------------------------------------------------------------------
P, R, A = "{aws.partition}", "{aws.region}", "{aws.account}"
ARN_MEMBERS = ("ResourceArn", "resourceArn", "ResourceARN", "resourceARN", "Arn", "arn")


def s3_resource(op: str, path: str) -> str:
    if op == "DeleteObjects":
        return f"arn:{P}:s3:::{{Bucket}}/*"
    if op == "CreateSession":
        return f"arn:{P}:s3express:{R}:{A}:bucket/{{Bucket}}"
    if "{Key+}" in path:
        return f"arn:{P}:s3:::{{Bucket}}/{{Key}}"
    if "{Bucket}" in path:
        return f"arn:{P}:s3:::{{Bucket}}"
    return "*"


def lambda_resource(op: str, path: str, members: dict[str, Any]) -> str:
    fn = f"arn:{P}:lambda:{R}:{A}:function:{{FunctionName}}"
    if "{FunctionName}" in path:
        return f"{{arn:FunctionName}}|{fn}"
    if "{LayerName}" in path:
        layer = f"arn:{P}:lambda:{R}:{A}:layer:{{LayerName}}"
        if "{VersionNumber}" in path:
            return f"{{arn:LayerName}}|{layer}:{{VersionNumber}}"
        return f"{{arn:LayerName}}|{layer}"
    if "{UUID}" in path:
        return f"arn:{P}:lambda:{R}:{A}:event-source-mapping:{{UUID}}"
    for name in ("Resource", "ARN", "CodeSigningConfigArn", "CapacityProviderName"):
        if f"{{{name}}}" in path:
            return f"{{arn:{name}}}"
    if "FunctionName" in members and op == "CreateFunction":
        return f"arn:{P}:lambda:{R}:{A}:function:{{body.FunctionName}}"
    return "*"


def iam_resource(op: str, members: dict[str, Any], required: set[str]) -> str:
    kinds = [
        ("Role", "RoleName", "role/"),
        ("InstanceProfile", "InstanceProfileName", "instance-profile/"),
        ("Group", "GroupName", "group/"),
        ("User", "UserName", "user/"),
        ("AccessKey", "UserName", "user/"),
        ("LoginProfile", "UserName", "user/"),
        ("MFADevice", "UserName", "user/"),
        ("SSHPublicKey", "UserName", "user/"),
        ("ServiceSpecificCredential", "UserName", "user/"),
        ("SigningCertificate", "UserName", "user/"),
    ]
    for noun, member, kind in kinds:
        if noun in op and member in members:
            return f"arn:{P}:iam::{A}:{kind}{{body.{member}}}"
    for member in ("PolicyArn", "OpenIDConnectProviderArn", "SAMLProviderArn"):
        if member in members:
            return f"{{arn:body.{member}}}"
    if "PolicySourceArn" in members:
        return "{arn:body.PolicySourceArn}"
    for _, member, kind in kinds:
        if member in required:
            return f"arn:{P}:iam::{A}:{kind}{{body.{member}}}"
    return "*"


def rpc_resource(service: str, op: str, members: dict[str, Any], required: set[str]) -> str:
    """Resources of query/json services, from the operation's body members."""
    has = members.__contains__
    if service == "iam":
        return iam_resource(op, members, required)
    if service == "sts":
        return "{arn:body.RoleArn}" if has("RoleArn") else "*"
    if service == "sqs":
        if has("QueueUrl"):
            return "{sqs.queue}"
        if has("QueueName"):
            return f"arn:{P}:sqs:{R}:{A}:{{body.QueueName}}"
        return "*"
    if service == "sns":
        found = [f"{{arn:body.{m}}}" for m in ("TopicArn", "TargetArn") if has(m)]
        for m in ("ResourceArn", "PlatformApplicationArn", "EndpointArn", "SubscriptionArn"):
            if has(m) and not found:
                found.append(f"{{arn:body.{m}}}")
        if op in ("Publish", "PublishBatch", "CreateTopic"):
            found.append("*" if op != "CreateTopic" else f"arn:{P}:sns:{R}:{A}:{{body.Name}}")
        return "|".join(found) or "*"
    if service in ("dynamodb", "dynamodbstreams"):
        if has("TableName"):
            return f"{{arn:body.TableName}}|arn:{P}:dynamodb:{R}:{A}:table/{{body.TableName}}"
        if has("RequestItems") or has("TransactItems"):
            return "{dynamodb.table}|*"
        for m in ("StreamArn", "ResourceArn", "BackupArn", "ExportArn", "ImportArn"):
            if has(m):
                return f"{{arn:body.{m}}}"
        if has("GlobalTableName"):
            return f"arn:{P}:dynamodb::{A}:global-table/{{body.GlobalTableName}}"
        return "*"
    if service == "logs":

        def group(member: str) -> str:
            return f"arn:{P}:logs:{R}:{A}:log-group:{{body.{member}}}"

        if has("logStreamName") and has("logGroupName"):
            found = [f"{group('logGroupName')}:log-stream:{{body.logStreamName}}"]
            if has("logGroupIdentifier"):
                found.append(
                    f"{{arn:body.logGroupIdentifier}}:log-stream:{{body.logStreamName}}"
                    f"|{group('logGroupIdentifier')}:log-stream:{{body.logStreamName}}"
                )
            return "|".join(found)
        found = []
        if has("logGroupIdentifier"):
            found += ["{arn:body.logGroupIdentifier}", group("logGroupIdentifier")]
        if has("logGroupName"):
            found.append(group("logGroupName"))
        for m in ("resourceArn", "resourceIdentifier"):
            if has(m):
                found.append(f"{{arn:body.{m}}}")
        return "|".join(found) or "*"
    if service == "secretsmanager":
        if has("SecretId"):
            # A name names the secret whose ARN ends in a random "-xxxxxx": left as a
            # wildcard, which the integration refuses unless allow_wildcard_resource is on.
            secret = f"arn:{P}:secretsmanager:{R}:{A}:secret:{{body.SecretId}}-??????"
            return f"{{arn:body.SecretId}}|{secret}"
        if op == "CreateSecret":
            return f"arn:{P}:secretsmanager:{R}:{A}:secret:{{body.Name}}-??????"
        return "*"
    if service == "kms":
        return "{kms.key}" if has("KeyId") else "*"
    if service == "ssm":
        if "Parameter" in op and has("Name"):
            return "{ssm.parameter}"
        if "Document" in op and has("Name"):
            return f"arn:{P}:ssm:{R}:{A}:document/{{body.Name}}"
        return "*"
    if service == "stepfunctions":
        for m in ("stateMachineArn", "executionArn", "activityArn", "mapRunArn", "resourceArn"):
            if has(m):
                return f"{{arn:body.{m}}}"
        return "*"
    if service == "kinesis":
        if has("StreamARN"):
            stream = f"arn:{P}:kinesis:{R}:{A}:stream/{{body.StreamName}}"
            return (
                f"{{arn:body.StreamARN}}|{stream}" if has("StreamName") else "{arn:body.StreamARN}"
            )
        if has("StreamName"):
            return f"arn:{P}:kinesis:{R}:{A}:stream/{{body.StreamName}}"
        return "*"
    if service == "ec2":
        return ec2_resource(op, members)
    for m in ARN_MEMBERS:
        if has(m) and m in required:
            return f"{{arn:body.{m}}}"
    return "*"


EC2_KINDS = [  # (noun in the operation name, the list member's wire name, ARN kind)
    ("Instance", "InstanceId", "instance"),
    ("Volume", "VolumeId", "volume"),
    ("Snapshot", "SnapshotId", "snapshot"),
    ("Image", "ImageId", "image"),
    ("SecurityGroup", "GroupId", "security-group"),
    ("Vpc", "VpcId", "vpc"),
    ("Subnet", "SubnetId", "subnet"),
    ("NetworkInterface", "NetworkInterfaceId", "network-interface"),
    ("KeyPair", "KeyName", "key-pair"),
]


def ec2_resource(op: str, members: dict[str, Any]) -> str:
    wire = set(members) | {m.get("locationName", "") for m in members.values()}
    for noun, member, kind in EC2_KINDS:
        if noun in op and (member in wire or f"{member}s" in members):
            return f"{{ec2.{kind}}}|*"
    return "*"


def rest_resource(service: str, op: str, path: str, members: dict[str, Any]) -> str:
    if service == "s3":
        return s3_resource(op, path)
    if service == "lambda":
        return lambda_resource(op, path, members)
    for m in ARN_MEMBERS:
        if f"{{{m}}}" in path:
            return f"{{arn:{m}}}"
    # REST paths name the resource they act on: the deepest ARN parameter of the path, when
    # the request gives an ARN (a role's ARN names what is passed, not what is acted on)
    names = [n for n in re.findall(r"\{([^}+]+)\+?\}", path) if n.lower().endswith("arn")]
    names = [n for n in names if "role" not in n.lower()]
    if names:
        return f"{{arn:{names[-1]}}}|*"
    return "*"


# --- the generator ----------------------------------------------------------------------
RPC = {"query", "ec2", "json", "smithy-rpc-v2-cbor"}
REST = {"rest-json", "rest-xml"}


def first_word(op: str) -> str:
    words = re.findall(r"[A-Z][a-z]*|[a-z]+|\d+", op)
    if not words:
        return op
    if words[0] == "Batch" and len(words) > 1:
        return words[1]
    return words[0]


RANK = {"read": 0, "write": 1, "destructive": 2}


def effect_of(service: str, op: str, method: str, action: str) -> str:
    from toolpass.integrations.aws import AWS

    word = first_word(op)
    effect = "read" if word in READ_VERBS else "write"
    if word in DESTRUCTIVE_VERBS or method == "DELETE":
        effect = "destructive"
    curated = EFFECTS.get(f"{service}:{op}", EFFECTS.get(action))
    if curated:
        effect = curated
    declared = AWS.action(action)
    if declared is None:
        raise SystemExit(f"{service}:{op}: {action} is not an AWS action toolpass accepts")
    explicit = any(a.name == action for a in AWS.actions)
    if explicit and not curated and effect != "destructive":
        return declared.effect  # aws.py declares this action's effect itself
    return max(effect, declared.effect, key=RANK.__getitem__)


def read_models(source: Path) -> tuple[str, dict[str, tuple[str, dict[str, Any]]]]:
    """(botocore version, {service: (api version, model)}) from a wheel or a folder."""
    files: dict[str, bytes] = {}
    version = "unknown"
    if source.is_file():
        with zipfile.ZipFile(source) as z:
            for name in z.namelist():
                if re.fullmatch(r"botocore/data/[^/]+/[^/]+/service-2\.json(\.gz)?", name):
                    files[name] = z.read(name)
                elif name == "botocore/__init__.py":
                    found = re.search(rb"__version__ = '([^']+)'", z.read(name))
                    version = found.group(1).decode() if found else version
    else:
        data = source if source.name == "data" else source / "botocore" / "data"
        for path in data.glob("*/*/service-2.json*"):
            files[f"botocore/data/{path.relative_to(data).as_posix()}"] = path.read_bytes()
        init = data.parent / "__init__.py"
        if init.is_file():
            found = re.search(r"__version__ = '([^']+)'", init.read_text())
            version = found.group(1) if found else version
    newest: dict[str, tuple[str, str]] = {}
    for name in files:
        _, _, service, api, _ = name.split("/")
        if service not in newest or api > newest[service][0]:
            newest[service] = (api, name)
    models = {}
    for service, (api, name) in newest.items():
        raw = files[name]
        models[service] = (api, json.loads(gzip.decompress(raw) if name.endswith(".gz") else raw))
    return version, models


def protocols(meta: dict[str, Any]) -> list[str]:
    found = list(meta.get("protocols") or [meta["protocol"]])
    if "awsQueryCompatible" in meta and "query" not in found:
        found.append("query")  # SQS, CloudWatch: the JSON API still answers the Query API
    return found


def split_uri(uri: str) -> tuple[str, list[str]]:
    path, _, query = uri.partition("?")
    conds = [t for t in query.split("&") if t and t.split("=", 1)[0] != "x-id"]
    # routes.py allows {name+} only last; one inside the path becomes {name} plus the
    # condition "+name" (the parameter spans segments: aws.py matches such rows itself)
    segments = path.split("/")
    for i, seg in enumerate(segments[:-1]):
        greedy = re.fullmatch(r"\{([^}]+)\+\}", seg)
        if greedy:
            segments[i] = "{" + greedy.group(1) + "}"
            conds.append("+" + greedy.group(1))
    return "/".join(segments), conds


def members_of(model: dict[str, Any], op: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    name = (op.get("input") or {}).get("shape")
    shape = model["shapes"].get(name, {}) if name else {}
    return shape.get("members", {}), set(shape.get("required", []))


def generate(models: dict[str, tuple[str, dict[str, Any]]]) -> tuple[dict[str, Any], list[Any]]:
    services: dict[str, Any] = {}
    rows: list[list[str]] = []
    for service, (api, model) in progress(sorted(models.items()), "services"):
        meta = model["metadata"]
        signing = meta.get("signingName") or meta["endpointPrefix"]
        prefix = PREFIX.get(service, signing)
        protos = protocols(meta)
        services[service] = {
            "signing": signing,
            "host": meta["endpointPrefix"],
            "protocols": protos,
            "target": meta.get("targetPrefix", ""),
            "version": api,
        }
        rest = bool(REST & set(protos))
        if not rest and not RPC & set(protos):
            raise SystemExit(f"{service}: unknown protocols {protos}")
        service_rows = []
        for op_name, op in sorted(model["operations"].items()):
            action = ACTIONS.get(f"{service}:{op_name}", f"{prefix}:{op_name}")
            members, required = members_of(model, op)
            method = op["http"]["method"].upper()
            if rest:
                path, conds = split_uri(op["http"]["requestUri"])
                resource = rest_resource(service, op_name, path, members)
                if service in ("apigateway", "apigatewayv2"):
                    # API Gateway's management API is authorized by HTTP method on the path
                    action = f"apigateway:{method}"
                    resource = f"arn:{P}:apigateway:{R}::{path}"
            else:
                path, conds = "/", []
                resource = rpc_resource(service, op_name, members, required)
            effect = effect_of(service, op_name, method, action)
            flags = FLAGS.get(f"{service}:{op_name}", "")
            service_rows.append(
                [
                    method,
                    path,
                    action,
                    resource,
                    effect,
                    flags,
                    service,
                    op_name,
                    conds,
                    members,
                    required,
                ]
            )
        if rest:
            disambiguate(service, service_rows)
        for row in service_rows:
            rows.append([*row[:8], "&".join(sorted(row[8]))])
    rows.sort(key=lambda r: (r[6], r[7]))
    known = {f"{r[6]}:{r[7]}" for r in rows}
    for name, curated in (("ACTIONS", ACTIONS), ("EFFECTS", EFFECTS), ("FLAGS", FLAGS)):
        stale = sorted(k for k in curated if k not in known)
        if stale:  # the overlay must name real operations (a renamed one would drop silently)
            raise SystemExit(f"{name} names no operation of these models: {', '.join(stale)}")
    return services, rows


def shape_key(method: str, path: str) -> tuple[str, str]:
    return method, re.sub(r"\{[^}]*?(\+?)\}", r"{\1}", path)


def disambiguate(service: str, rows: list[list[Any]]) -> None:
    """Operations sharing a method and path get their required query and header members
    as conditions, so each request names one of them."""
    groups: dict[tuple[Any, ...], list[list[Any]]] = defaultdict(list)
    for row in rows:
        groups[(*shape_key(row[0], row[1]), tuple(sorted(row[8])))].append(row)
    for group in groups.values():
        if len(group) < 2:
            continue
        for row in group:
            members, required = row[9], row[10]
            for name in sorted(required):
                member = members[name]
                where, wire = member.get("location"), member.get("locationName", name)
                if where == "querystring":
                    row[8].append(wire)
                elif where == "header":
                    row[8].append("@" + wire.lower())
    again: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for row in rows:
        again[(*shape_key(row[0], row[1]), tuple(sorted(row[8])))].append(row[7])
    for key, ops in sorted(again.items()):
        if len(ops) > 1:
            sys.stderr.write(
                f"note: {service} {key[0]} {key[1]} {key[2]}: {', '.join(ops)} share a route\n"
            )


def download() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="botocore-"))
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(folder), "botocore"],
        check=True,
    )
    return next(folder.glob("botocore-*.whl"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, help="botocore wheel, unpacked wheel or data dir")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    source = args.source or download()
    version, models = read_models(source)
    services, rows = generate(models)
    table = {
        "source": f"PyPI botocore {version} ({source.name}): botocore/data/<service>/"
        "<api-version>/service-2.json, newest api-version of each service",
        "generator": "core/src/toolpass/integrations/aws/generate.py",
        "format": "[method, path, action, resource, effect, flags, service, operation, "
        "conditions]; see the generator's docstring",
        "services": services,
        "routes": rows,
    }
    text = json.dumps(table, sort_keys=True, separators=(",", ":")).encode()
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as f:
        f.write(text)
    args.out.write_bytes(buffer.getvalue())
    ops = sum(len(m["operations"]) for _, m in models.values())
    sys.stderr.write(
        f"{len(services)} services, {ops} operations, {len(rows)} rows -> {args.out} "
        f"({len(buffer.getvalue()) // 1024} KB)\n"
    )


if __name__ == "__main__":
    main()
