// The AWS SDK for Go v2 (Debian's golang-github-aws-aws-sdk-go-v2-dev, whose SQS client speaks the
// Query protocol) against shared-sqs: create a queue, send a message with attributes, receive it.
// The SDK checks MD5OfMessageBody on SendMessage and ReceiveMessage itself and fails the call when it
// differs; what came back is printed as one JSON line for the test to check the rest.
//
// Usage: SHARED_SQS_URL=http://127.0.0.1:PORT go run go-sdk-v2.go QUEUE_NAME
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func main() {
	ctx := context.Background()
	queueName := os.Args[1]

	// docs/clients.md quotes this block.
	// --- client ---
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
	)
	if err != nil {
		fail("config", err)
	}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		o.EndpointResolver = sqs.EndpointResolverFromURL(os.Getenv("SHARED_SQS_URL"))
	})
	// --- end client ---

	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queueName)})
	if err != nil {
		fail("CreateQueue", err)
	}
	sent, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    created.QueueUrl,
		MessageBody: aws.String("hello from Go: é ü ✓"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"color": {DataType: aws.String("String"), StringValue: aws.String("blue")},
			"count": {DataType: aws.String("Number"), StringValue: aws.String("42")},
			"blob":  {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 254, 255}},
		},
	})
	if err != nil {
		fail("SendMessage", err)
	}
	received, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:              created.QueueUrl,
		MessageAttributeNames: []string{"All"},
		WaitTimeSeconds:       5,
	})
	if err != nil {
		fail("ReceiveMessage", err)
	}
	out, _ := json.Marshal(map[string]interface{}{"queueUrl": created.QueueUrl, "sent": sent, "received": received.Messages})
	fmt.Println(string(out))
}

func fail(call string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", call, err)
	os.Exit(1)
}
