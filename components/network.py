"""Network: a new VPC over two or three zones (private node subnets behind NAT), or an existing one."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpushare.config import NetworkConfig

# Zone IDs whose subnets EKS refuses for a cluster (EKS user guide, "View Amazon EKS networking requirements
# for VPC and subnets": use1-az3, usw1-az2, cac1-az3). Zone IDs, not names: names map to different zones
# in each account.
EKS_UNSUPPORTED_ZONE_IDS = ["use1-az3", "usw1-az2", "cac1-az3"]


@dataclass(frozen=True)
class NetworkArgs:
    """`cluster_name` goes into Name and discovery tags: the component's own name only names children."""

    cluster_name: str
    network: NetworkConfig
    tags: dict[str, str]


class Network(pulumi.ComponentResource):
    """Subnets are tagged for load balancers and for Karpenter's `karpenter.sh/discovery` selector."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[list[str]]
    public_subnet_ids: pulumi.Output[list[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:Network", name, None, opts)
        network = args.network
        if network.creates_vpc:
            self._create(name, args)
        else:
            self.vpc_id = pulumi.Output.from_input(network.vpc_id or "")
            self.private_subnet_ids = pulumi.Output.from_input(list(network.private_subnet_ids))
            self.public_subnet_ids = pulumi.Output.from_input(list(network.public_subnet_ids))
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _create(self, name: str, args: NetworkArgs) -> None:
        cluster = args.cluster_name
        tags = args.tags
        child = pulumi.ResourceOptions(parent=self)
        # Standard zones only: Local Zones and Wavelength zones (opt-in) cannot host EKS subnets.
        zone_ids = aws.get_availability_zones_output(
            state="available",
            exclude_zone_ids=EKS_UNSUPPORTED_ZONE_IDS,
            filters=[
                aws.GetAvailabilityZonesFilterArgs(name="opt-in-status", values=["opt-in-not-required"]),
                aws.GetAvailabilityZonesFilterArgs(name="zone-type", values=["availability-zone"]),
            ],
        ).zone_ids
        vpc_net = ipaddress.ip_network(args.network.cidr)
        # Halves: private /n+2 blocks for nodes (pods take VPC IPs), small public blocks for NAT and LBs.
        private_blocks = list(vpc_net.subnets(prefixlen_diff=2))
        public_blocks = list(private_blocks[-1].subnets(prefixlen_diff=4))
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=str(vpc_net),
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**tags, "Name": cluster},
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags={**tags, "Name": cluster}, opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={**tags, "Name": f"{cluster}-public"},
            opts=child,
        )
        private_ids: list[pulumi.Output[str]] = []
        public_ids: list[pulumi.Output[str]] = []
        for index in range(args.network.zone_count):
            zone_id = zone_ids[index]
            public = aws.ec2.Subnet(
                f"{name}-public-{index}",
                vpc_id=vpc.id,
                cidr_block=str(public_blocks[index]),
                availability_zone_id=zone_id,
                map_public_ip_on_launch=False,
                tags={**tags, "Name": f"{cluster}-public-{index}", "kubernetes.io/role/elb": "1"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{index}", subnet_id=public.id, route_table_id=public_rt.id, opts=child
            )
            eip = aws.ec2.Eip(f"{name}-nat-{index}", domain="vpc", tags={**tags, "Name": cluster}, opts=child)
            nat = aws.ec2.NatGateway(
                f"{name}-nat-{index}",
                subnet_id=public.id,
                allocation_id=eip.id,
                tags={**tags, "Name": f"{cluster}-nat-{index}"},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )
            private = aws.ec2.Subnet(
                f"{name}-private-{index}",
                vpc_id=vpc.id,
                cidr_block=str(private_blocks[index]),
                availability_zone_id=zone_id,
                tags={
                    **tags,
                    "Name": f"{cluster}-private-{index}",
                    "kubernetes.io/role/internal-elb": "1",
                    "karpenter.sh/discovery": cluster,
                },
                opts=child,
            )
            private_rt = aws.ec2.RouteTable(
                f"{name}-private-{index}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
                tags={**tags, "Name": f"{cluster}-private-{index}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-private-{index}", subnet_id=private.id, route_table_id=private_rt.id, opts=child
            )
            private_ids.append(private.id)
            public_ids.append(public.id)
        self.vpc_id = vpc.id
        self.private_subnet_ids = pulumi.Output.all(*private_ids)
        self.public_subnet_ids = pulumi.Output.all(*public_ids)
