/**
 * The command table: every command of `edgelog`, in the order `--help` lists them. A command
 * is a file beside this one exporting a {@link CliCommand}; adding one is one line here (and
 * its kind in {@link Command}).
 */
import type { CliCommand } from "../command.ts";
import { type ConsumeCommand, consume } from "./consume.ts";
import { type GroupsCommand, groupsDelete, groupsDescribe, groupsList, groupsResetOffsets } from "./groups.ts";
import { type KafkaBridgeCommand, kafkaBridge } from "./kafka-bridge.ts";
import { type MetadataCommand, metadata } from "./metadata.ts";
import { type ProduceCommand, produce } from "./produce.ts";
import { type ReadCommand, read } from "./read.ts";
import { aclsAdd, aclsList, aclsRemove, quotasAlter, quotasList, type SecurityCommand, tokenIssue, usersCreate, usersDelete, usersList } from "./security.ts";
import {
  namespacesCreate,
  namespacesDelete,
  namespacesDescribe,
  namespacesGetPolicies,
  namespacesList,
  namespacesRemovePolicy,
  namespacesSetPolicy,
  type TenantsCommand,
  tenantsCreate,
  tenantsDelete,
  tenantsDescribe,
  tenantsList,
} from "./tenants.ts";
import {
  type SubscriptionsCommand,
  subscribe,
  subscriptionsClearBacklog,
  subscriptionsCreate,
  subscriptionsDelete,
  subscriptionsList,
  subscriptionsReset,
  subscriptionsSkip,
  subscriptionsStats,
} from "./subscriptions.ts";
import { type TopCommand, top } from "./top.ts";
import { type TopicsCommand, topicsAlter, topicsCreate, topicsDelete, topicsDeleteRecords, topicsDescribe, topicsElectLeader, topicsList, topicsReassign } from "./topics.ts";

/** A parsed command line of any command. */
export type Command =
  | TopicsCommand
  | TenantsCommand
  | MetadataCommand
  | ProduceCommand
  | ConsumeCommand
  | GroupsCommand
  | SubscriptionsCommand
  | ReadCommand
  | SecurityCommand
  | KafkaBridgeCommand
  | TopCommand;

/** Two-word commands share their first word; `topics` alone lists the subcommands in this order. */
export const COMMANDS: readonly CliCommand<Command>[] = [
  topicsList,
  topicsCreate,
  topicsDescribe,
  topicsAlter,
  topicsDelete,
  topicsDeleteRecords,
  topicsElectLeader,
  topicsReassign,
  tenantsList,
  tenantsCreate,
  tenantsDescribe,
  tenantsDelete,
  namespacesList,
  namespacesCreate,
  namespacesDescribe,
  namespacesDelete,
  namespacesSetPolicy,
  namespacesGetPolicies,
  namespacesRemovePolicy,
  metadata,
  produce,
  consume,
  groupsList,
  groupsDescribe,
  groupsResetOffsets,
  groupsDelete,
  subscribe,
  read,
  subscriptionsList,
  subscriptionsCreate,
  subscriptionsStats,
  subscriptionsReset,
  subscriptionsSkip,
  subscriptionsClearBacklog,
  subscriptionsDelete,
  top,
  aclsList,
  aclsAdd,
  aclsRemove,
  usersCreate,
  usersDelete,
  usersList,
  quotasList,
  quotasAlter,
  tokenIssue,
  kafkaBridge,
];
